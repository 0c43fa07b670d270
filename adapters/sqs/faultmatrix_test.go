//go:build faults

package sqs

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
)

// errOutage is the failure of every call of the Sources while a cut lasts.
var errOutage = errors.New("adaptertest: injected outage: SQS unreachable")

// faultHarness answers the fault matrix on the emulator. SQS is reached by
// one HTTP call at a time, so a cut is every call of the Sources failing
// in the SDK's middleware; a refused copy is the call making it failing.
type faultHarness struct {
	*harness
	down atomic.Bool

	refuseMu sync.Mutex
	refusing map[string]adaptertest.CopyOp // source → the copy refused until restored
}

var _ adaptertest.Faulter = (*faultHarness)(nil)

func (h *faultHarness) NewSource(t testing.TB, source, name string) consumer.Source {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	src, err := New(ctx, Config{
		QueueName: source, CreateQueues: true, Consumer: name, Endpoint: h.endpoint,
		WaitTimeSeconds: 1, Receivers: 1, Logger: quietLogger(),
		Client: hookedClient(h.endpoint, h.fault),
	})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// fault fails every call while down, the copies refused, then what
// FailNextCopy armed.
func (h *faultHarness) fault(in any) error {
	if h.down.Load() {
		return errOutage
	}
	var op adaptertest.CopyOp
	var queue string
	switch in := in.(type) {
	case *awssqs.ChangeMessageVisibilityInput:
		op, queue = adaptertest.CopyRetry, queueNameFromURL(aws.ToString(in.QueueUrl))
	case *awssqs.SendMessageInput:
		op, queue = adaptertest.CopyDeadLetter, queueNameFromURL(aws.ToString(in.QueueUrl))
	}
	h.refuseMu.Lock()
	for source, refused := range h.refusing {
		if refused == op && (queue == source || queue == dlqName(source, adaptertest.ConsumerName)) {
			h.refuseMu.Unlock()
			return errors.New("adaptertest: injected refusal of the " + string(op) + " copy for " + source)
		}
	}
	h.refuseMu.Unlock()
	return h.hook(in)
}

func (h *faultHarness) refuse(op adaptertest.CopyOp) func(testing.TB, string) func() {
	return func(_ testing.TB, source string) func() {
		h.refuseMu.Lock()
		defer h.refuseMu.Unlock()
		h.refusing[source] = op
		return func() {
			h.refuseMu.Lock()
			defer h.refuseMu.Unlock()
			delete(h.refusing, source)
		}
	}
}

// FaultCase injects a fault into the Sources' calls, or runs the adapter's
// own test of it.
func (h *faultHarness) FaultCase(f adaptertest.Fault) adaptertest.FaultCase {
	switch f {
	case adaptertest.CutMidReceive, adaptertest.CutMidSettle:
		return adaptertest.FaultCase{Inject: func(testing.TB, string) func() {
			h.down.Store(true)
			return func() { h.down.Store(false) }
		}}
	case adaptertest.CopyRefused:
		return adaptertest.FaultCase{Inject: h.refuse(adaptertest.CopyRetry)}
	case adaptertest.DeadLetterGone:
		return adaptertest.FaultCase{Inject: h.refuse(adaptertest.CopyDeadLetter)}
	case adaptertest.LeaseLost:
		return adaptertest.FaultCase{Run: TestLeaseLost}
	case adaptertest.DeliveryLimit:
		return adaptertest.FaultCase{Run: TestRedrivePolicyChecked}
	case adaptertest.KillInFlight:
		return adaptertest.FaultCase{Run: TestKilledConsumer}
	case adaptertest.CopyRefusedMidSettlement:
		return adaptertest.FaultCase{Run: TestCloseCopyRejected}
	case adaptertest.BrokerRestart, adaptertest.BrokerRestartNoPersistence:
		return adaptertest.FaultCase{NotApplicable: "SQS is a managed service with no restart a client sees but an outage (CutMidReceive, CutMidSettle); it never loses what it acknowledged"}
	case adaptertest.DelayedRetriesSaturate:
		return adaptertest.FaultCase{NotApplicable: "a retry is the message's own visibility timeout: a waiting retry is invisible in its queue and holds no receive window"}
	case adaptertest.ReplicaConfigsDiffer:
		return adaptertest.FaultCase{NotApplicable: "a Source's settings travel with its calls (visibility, wait): replicas share no consumer setting on the server"}
	}
	return adaptertest.FaultCase{}
}

// TestFaultMatrix runs the fault kit's matrix on the SQS emulator.
func TestFaultMatrix(t *testing.T) {
	endpoint, client := emulator(t)
	adaptertest.RunFaults(t, &faultHarness{harness: &harness{endpoint: endpoint, client: client}, refusing: map[string]adaptertest.CopyOp{}})
}
