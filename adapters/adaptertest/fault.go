package adaptertest

import (
	"testing"
	"time"
)

// Fault names one case of the fault matrix every adapter's harness answers
// (see RunFaults and docs/reliability.md).
type Fault string

// The faults of the matrix, in the order RunFaults runs them.
const (
	// BrokerRestart: the broker stops and starts again with what it stored
	// kept, while deliveries are in flight.
	BrokerRestart Fault = "BrokerRestart"
	// BrokerRestartNoPersistence: the broker is killed and starts empty
	// (streams, groups, queues gone) while the consumer waits in Receive;
	// what is published afterwards must be handled without a restart of
	// the consumer.
	BrokerRestartNoPersistence Fault = "BrokerRestartNoPersistence"
	// CutMidReceive: every connection of the consumer is cut, and new ones
	// refused, while it waits in Receive.
	CutMidReceive Fault = "CutMidReceive"
	// CutMidSettle: every connection of the consumer is cut, and new ones
	// refused, while handlers return: acks and copies meet the cut.
	CutMidSettle Fault = "CutMidSettle"
	// LeaseLost: the lease of deliveries in the handler is lost (renewals
	// cannot reach the broker, or another consumer takes them).
	LeaseLost Fault = "LeaseLost"
	// DeliveryLimit: a message reaches the broker's delivery limit.
	DeliveryLimit Fault = "DeliveryLimit"
	// CopyRefused: the broker refuses every retry copy while the fault
	// lasts.
	CopyRefused Fault = "CopyRefused"
	// DeadLetterGone: the dead-letter destination is full, gone or
	// unusable while the fault lasts.
	DeadLetterGone Fault = "DeadLetterGone"
	// DelayedRetriesSaturate: retry copies waiting out long delays fill a
	// flow-control window (prefetch, max ack pending).
	DelayedRetriesSaturate Fault = "DelayedRetriesSaturate"
	// ReplicaConfigsDiffer: replicas of one consumer run with different
	// settings (a rolling deploy).
	ReplicaConfigsDiffer Fault = "ReplicaConfigsDiffer"
	// CloseInFlight: the consumer stops cleanly with deliveries held by
	// handlers and more received but unhandled; a new one takes over. The
	// kit runs it on every harness: it needs nothing of the broker.
	CloseInFlight Fault = "CloseInFlight"
	// KillInFlight: the consumer's process dies (SIGKILL) with deliveries
	// in flight: nothing is acked or released.
	KillInFlight Fault = "KillInFlight"
	// CopyRefusedMidSettlement: the broker itself refuses a copy part-way
	// through a settlement made of several steps (a script, a batch entry).
	CopyRefusedMidSettlement Fault = "CopyRefusedMidSettlement"
)

// Faults lists every Fault, in the order RunFaults runs them.
var Faults = []Fault{
	BrokerRestart, BrokerRestartNoPersistence, CutMidReceive, CutMidSettle, LeaseLost, DeliveryLimit,
	CopyRefused, DeadLetterGone, DelayedRetriesSaturate, ReplicaConfigsDiffer, CloseInFlight, KillInFlight,
	CopyRefusedMidSettlement,
}

// ResumeBound is how long after a fault ends every message of the generic
// scenario may take to be handled or dead-lettered.
const ResumeBound = 30 * time.Second

// FaultHold is how long the generic scenario keeps a fault on before it
// ends it.
const FaultHold = time.Second

// FaultCase is a harness's answer for one Fault: exactly one of Inject, Run
// and NotApplicable is set.
type FaultCase struct {
	// Inject starts the fault for source and returns the func that ends
	// it. The kit runs its generic scenario around it, on Sources the
	// harness's NewSource opens: keyed messages, a consumer, the fault,
	// its end, and the checks (nothing lost, resumed within ResumeBound,
	// Attempt right, per-key order kept).
	Inject func(t testing.TB, source string) (restore func())
	// Run is a scenario of the broker's own for the fault, run instead of
	// the generic one (an adapter test that injects the fault where only
	// that broker can): it makes the same checks.
	Run func(t *testing.T)
	// NotApplicable says why the fault cannot happen on the broker.
	NotApplicable string
	// KnownViolation, set with Inject (or alone for CloseInFlight), names an open defect: per-key order
	// or Attempt that the broker is known to break in this case. The
	// generic scenario still fails on anything lost or not resumed within
	// ResumeBound, and logs order and Attempt violations with this reason
	// instead of failing. Empty (the default) checks everything; remove it
	// with the fix.
	KnownViolation string
}

// Faulter is a Harness that answers the fault matrix.
type Faulter interface {
	Harness
	// FaultCase returns how the harness injects f, or why f cannot
	// happen on its broker. The zero FaultCase fails the case: every
	// Fault needs an injection or a reason. For CloseInFlight, which the
	// kit injects itself, only KnownViolation is read.
	FaultCase(f Fault) FaultCase
}

// RunFaults runs the fault matrix on h: for each Fault in Faults, a subtest
// of that name runs RunFault. A case the harness neither injects nor
// explains fails; none is skipped.
func RunFaults(t *testing.T, h Faulter) {
	for _, f := range Faults {
		t.Run(string(f), func(t *testing.T) { RunFault(t, h, f) })
	}
}

// RunFault runs one case of the matrix on h: the harness's injection in the
// generic scenario, or its own scenario, or it logs why the fault does not
// apply; a case the harness neither injects nor explains fails. A
// harness's FaultCase.Run may call it with another harness (a broker of
// the test's own that the fault can stop) to run the generic scenario
// there.
func RunFault(t *testing.T, h Faulter, f Fault) {
	c := h.FaultCase(f)
	if f == CloseInFlight {
		runFaultScenario(t, h, f, nil, c.KnownViolation)
		return
	}
	switch {
	case c.Inject != nil:
		runFaultScenario(t, h, f, c.Inject, c.KnownViolation)
	case c.Run != nil:
		c.Run(t)
	case c.NotApplicable != "":
		t.Logf("n/a: %s", c.NotApplicable)
	default:
		t.Fatalf("the harness (%T) neither injects %s nor says why it cannot apply", h, f)
	}
}
