package adaptertest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/retry"
)

// Shape of the generic fault scenario: faultKeys keys of faultPerBatch
// messages in each of two batches, plus two poison messages (dead-lettered)
// and two flaky ones (failing their first attempt) in the second batch.
const (
	faultKeys     = 4
	faultPerBatch = 8
	faultHeldSeq  = 3 // the first batch's message of each key held by its handler over the fault
)

var (
	faultPoison = []string{"poison-1", "poison-2"}
	faultFlaky  = []string{"flaky-1", "flaky-2"}
)

// runFaultScenario is the generic case of f: the first batch is published
// and handled; the fault starts (while a handler holds a delivery, each
// key's fourth message being held on its first call, or, for
// CutMidReceive and BrokerRestartNoPersistence, once the first batch is
// handled and the consumer waits in Receive); the held handlers return; after FaultHold the fault ends; the second
// batch is published (during the fault where the broker takes publishes);
// then every message must be handled or dead-lettered within ResumeBound,
// each handler call with Attempt >= 1 and never lower than before, the
// first call of each message with Attempt 1, and each key's messages first
// handled in publish order (unless the broker declares
// Capabilities().NoOrder). inject nil is CloseInFlight: the kit stops the
// consumer and starts a new one over a new Source.
func runFaultScenario(t *testing.T, h Faulter, f Fault, inject func(testing.TB, string) func(), known string) {
	idle := f == CutMidReceive || f == BrokerRestartNoPersistence
	publishDuring := f != BrokerRestart && f != BrokerRestartNoPersistence
	name := SourceName("fault")
	r := newFaultRecorder(!idle)

	h.Publish(t, name, faultBatch(0)...)
	src := h.NewSource(t, name, ConsumerName)
	if caps := src.Capabilities(); caps.NoOrder {
		r.noOrder = true
		t.Logf("%s keeps no order (Capabilities.NoOrder): per-key order is not checked", caps.Broker)
	}
	stop := r.start(t, src)
	t.Cleanup(r.releaseHeld) // registered after the consumer's stop, so run before it
	if idle {
		WaitUntil(t, WaitTimeout, "the first batch", func() bool { return r.doneCount() == faultKeys*faultPerBatch })
	} else {
		select {
		case <-r.held:
		case <-time.After(WaitTimeout):
			t.Fatalf("no handler reached a held delivery within %s", WaitTimeout)
		}
	}

	var restore func()
	if inject == nil {
		stopped, first := make(chan struct{}), stop
		go func() { defer close(stopped); first() }()
		restore = func() {
			<-stopped
			stop = r.start(t, h.NewSource(t, name, ConsumerName))
		}
	} else {
		restore = inject(t, name)
	}
	r.releaseHeld()
	second := append(faultBatch(faultPerBatch), faultExtras()...)
	if publishDuring {
		h.Publish(t, name, second...)
	}
	time.Sleep(FaultHold) // the fault lasts a while: no event marks "long enough"
	restore()
	ended := time.Now()
	if !publishDuring {
		h.Publish(t, name, second...)
	}

	want := 2*faultKeys*faultPerBatch + len(faultFlaky)
	for r.doneCount() < want || r.deadCount() < len(faultPoison) {
		if time.Since(ended) > ResumeBound {
			t.Errorf("not resumed within %s after the fault: %d of %d messages handled or dead-lettered, %d of %d poison ones dead-lettered",
				ResumeBound, r.doneCount(), want, r.deadCount(), len(faultPoison))
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	resumed := time.Since(ended)
	stop()
	r.check(t, h.DeadLetters(t, name, ConsumerName, len(faultPoison), WaitTimeout), known)
	if !t.Failed() {
		t.Logf("%s: 0 lost, resumed in %.1f s (every message handled or dead-lettered after the fault ended)", f, resumed.Seconds())
	}
}

// faultBatch returns faultPerBatch messages per key, sequence numbers from
// first on.
func faultBatch(first int) []*consumer.Message {
	var out []*consumer.Message
	for seq := first; seq < first+faultPerBatch; seq++ {
		for k := range faultKeys {
			key := fmt.Sprintf("k%d", k)
			out = append(out, msg(faultID(key, seq), key, fmt.Sprint(seq)))
		}
	}
	return out
}

func faultID(key string, seq int) string { return fmt.Sprintf("%s-%02d", key, seq) }

func faultExtras() []*consumer.Message {
	var out []*consumer.Message
	for _, id := range faultPoison {
		out = append(out, msg(id, "poison", "p"))
	}
	for _, id := range faultFlaky {
		out = append(out, msg(id, "flaky", "f"))
	}
	return out
}

// faultRecorder is the generic scenario's handler and its record.
type faultRecorder struct {
	held     chan struct{} // one send per held delivery reaching the handler
	release  chan struct{} // closed: held handlers return
	released sync.Once

	mu       sync.Mutex
	holding  map[string]bool  // IDs to hold on their first call
	attempts map[string][]int // ID → Attempt of each handler call
	done     map[string]bool  // IDs handled successfully (flaky ones: retried or not)
	dead     map[string]bool  // IDs the runtime dead-lettered
	errs     []string
	noOrder  bool // the broker keeps no order: skip the order check
}

func newFaultRecorder(hold bool) *faultRecorder {
	r := &faultRecorder{
		held: make(chan struct{}, faultKeys), release: make(chan struct{}),
		holding: map[string]bool{}, attempts: map[string][]int{}, done: map[string]bool{}, dead: map[string]bool{},
	}
	if hold {
		for k := range faultKeys {
			r.holding[faultID(fmt.Sprintf("k%d", k), faultHeldSeq)] = true
		}
	}
	return r
}

// releaseHeld lets the held handlers return.
func (r *faultRecorder) releaseHeld() { r.released.Do(func() { close(r.release) }) }

// start runs a consumer over src with the recorder's handler.
func (r *faultRecorder) start(t *testing.T, src consumer.Source) (stop func()) {
	_, stop = RunConsumer(t, src, consumer.HandlerFunc(r.handle), consumer.Config{
		Name: ConsumerName, Concurrency: 2 * faultKeys,
		Retry: retry.Policy{MaxAttempts: 3, InitialInterval: RetryDelay, MaxInterval: RetryDelay, Multiplier: 1, Jitter: retry.NoJitter},
		Observer: observerFunc(func(ev consumer.Event) {
			if ev.Outcome == consumer.OutcomeDeadLettered {
				r.mu.Lock()
				r.dead[ev.Message.ID] = true
				r.mu.Unlock()
			}
		}),
	})
	return stop
}

func (r *faultRecorder) handle(ctx context.Context, m *consumer.Message) error {
	r.mu.Lock()
	prev := r.attempts[m.ID]
	switch {
	case m.Attempt < 1:
		r.errs = append(r.errs, fmt.Sprintf("%s: Attempt %d", m.ID, m.Attempt))
	case len(prev) == 0 && m.Attempt != 1:
		r.errs = append(r.errs, fmt.Sprintf("%s: first handled with Attempt %d, want 1", m.ID, m.Attempt))
	case len(prev) > 0 && m.Attempt < prev[len(prev)-1]:
		r.errs = append(r.errs, fmt.Sprintf("%s: Attempt %d after %d", m.ID, m.Attempt, prev[len(prev)-1]))
	}
	r.attempts[m.ID] = append(prev, m.Attempt)
	hold := r.holding[m.ID]
	delete(r.holding, m.ID)
	r.mu.Unlock()

	if hold {
		r.held <- struct{}{}
		select {
		case <-r.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	switch m.Key {
	case "poison":
		return consumer.Permanent(errors.New("poison"))
	case "flaky":
		if m.Attempt == 1 {
			return errors.New("flaky")
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if m.Key != "flaky" && !r.done[m.ID] && !r.noOrder {
		var seq int
		if _, err := fmt.Sscanf(string(m.Body), "%d", &seq); err == nil && seq > 0 && !r.done[faultID(m.Key, seq-1)] {
			r.errs = append(r.errs, fmt.Sprintf("%s first handled before %s", m.ID, faultID(m.Key, seq-1)))
		}
	}
	r.done[m.ID] = true
	return nil
}

// doneCount counts the keyed and flaky messages handled or dead-lettered.
func (r *faultRecorder) doneCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.done)
	for id := range r.dead {
		if !r.done[id] && id != faultPoison[0] && id != faultPoison[1] {
			n++
		}
	}
	return n
}

func (r *faultRecorder) deadCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, id := range faultPoison {
		if r.dead[id] {
			n++
		}
	}
	return n
}

// check reports the handler's findings (logged only when a known violation
// explains them) and that every message was handled
// or dead-lettered (found in dl, the harness's dead letters), every poison
// message dead-lettered.
func (r *faultRecorder) check(t *testing.T, dl []*consumer.Message, known string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.errs {
		if known != "" {
			t.Logf("known violation (%s): %s", known, e)
			continue
		}
		t.Error(e)
	}
	inDL := map[string]bool{}
	for _, m := range dl {
		inDL[m.ID] = true
	}
	all := append(faultBatch(0), append(faultBatch(faultPerBatch), faultExtras()...)...)
	lost := 0
	for _, m := range all {
		dead := r.dead[m.ID] && inDL[m.ID]
		switch {
		case m.Key == "poison" && !inDL[m.ID]:
			t.Errorf("%s is not in the dead letters", m.ID)
			lost++
		case m.Key != "poison" && !r.done[m.ID] && !dead:
			t.Errorf("%s neither handled nor dead-lettered", m.ID)
			lost++
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d messages lost", lost, len(all))
	}
}
