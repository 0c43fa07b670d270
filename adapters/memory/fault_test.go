package memory_test

import (
	"testing"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/adapters/memory"
)

// inProcess is why the faults of a broker process do not apply: the memory
// broker lives in the consumer's process.
const inProcess = "the broker lives in the consumer's process: it restarts or dies only with the consumer, which then starts afresh"

// FaultCase injects the memory broker's faults: SetDown for a cut (every
// Receive and settlement fails until it ends), InjectFaults for refused
// copies.
func (h harness) FaultCase(f adaptertest.Fault) adaptertest.FaultCase {
	switch f {
	case adaptertest.CutMidReceive, adaptertest.CutMidSettle:
		return adaptertest.FaultCase{Inject: func(testing.TB, string) func() {
			h.b.SetDown(true)
			return func() { h.b.SetDown(false) }
		}}
	case adaptertest.CopyRefused:
		return adaptertest.FaultCase{Inject: h.refuse(memory.OpRetry)}
	case adaptertest.DeadLetterGone:
		return adaptertest.FaultCase{Inject: h.refuse(memory.OpDeadLetter)}
	case adaptertest.BrokerRestart, adaptertest.BrokerRestartNoPersistence, adaptertest.KillInFlight:
		return adaptertest.FaultCase{NotApplicable: inProcess}
	case adaptertest.LeaseLost:
		return adaptertest.FaultCase{NotApplicable: "deliveries hold no lease: one stays with its Source until settled or the Source closes"}
	case adaptertest.DeliveryLimit:
		return adaptertest.FaultCase{NotApplicable: "no broker-side delivery limit: the retry policy is the only one (conformance case DeadLetter)"}
	case adaptertest.DelayedRetriesSaturate:
		return adaptertest.FaultCase{NotApplicable: "a delayed retry waits in the broker's queue until due and is not handed out before: it holds no window"}
	case adaptertest.ReplicaConfigsDiffer:
		return adaptertest.FaultCase{NotApplicable: "NewSource takes no settings: every replica's Source is the same"}
	case adaptertest.CopyRefusedMidSettlement:
		return adaptertest.FaultCase{NotApplicable: "a settlement is one step under the queue's lock: the copy and the removal of the original happen together or not at all"}
	}
	return adaptertest.FaultCase{}
}

// refuse makes every op copy fail until restored.
func (h harness) refuse(op memory.Op) func(testing.TB, string) func() {
	return func(testing.TB, string) func() {
		h.b.InjectFaults(op, 1<<30)
		return func() { h.b.InjectFaults(op, 0) }
	}
}

func TestFaults(t *testing.T) {
	adaptertest.RunFaults(t, harness{memory.NewBroker()})
}
