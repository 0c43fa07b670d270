package consumer

// The scheduling seam. A scheduler decides which goroutine runs which
// delivery, and when. It knows a delivery only by its lane key and hands it
// back through jobs.run; the window, the breaker, the handler chain and
// settlement all live on the Consumer's side of the funcs in jobs. Two
// schedulers implement the seam: the runtime's (scheduler, in scheduler.go,
// workers.go, lanes.go, solo.go and help.go) and the plain reference one
// (plainScheduler, plainsched.go), the oracle of the property tests.

// laneKey names the lane a delivery runs on: deliveries of one lane run one
// after another, in the order they were received. The zero laneKey is no
// lane: such a delivery runs on its own, beside any other.
type laneKey struct {
	kind      laneKind
	key       string // the ordering key, for laneByKey
	partition int32  // the partition, for laneByPartition
}

type laneKind uint8

const (
	laneNone laneKind = iota
	laneByKey
	laneByPartition
)

// laneFunc returns the lane function of a Consumer under cfg, or nil when
// deliveries need no lanes: unordered, or one worker, which runs deliveries
// in the order they were received. Per Ordering, a delivery runs on its
// key's lane, or on its partition's for OrderByPartition and for a message
// without a key.
func laneFunc(cfg *Config) func(Delivery) laneKey {
	if cfg.Ordering == Unordered || cfg.Concurrency == 1 {
		return nil
	}
	byPartition := cfg.Ordering == OrderByPartition
	return func(d Delivery) laneKey {
		m := d.Message()
		if byPartition || m.Key == "" {
			return laneKey{kind: laneByPartition, partition: m.Partition}
		}
		return laneKey{kind: laneByKey, key: m.Key}
	}
}

// jobs is everything a scheduler is given: its whole view of the Consumer.
type jobs[T any] struct {
	// workers is the most items run at once, on workers numbered 0 to
	// workers-1.
	workers int
	// inFlight is the most items received and not yet run.
	inFlight int
	// receive takes one turn of intake and returns the items to schedule.
	// It is never called concurrently, and may block until there is room
	// for them. An error ends intake for good; the items returned with it
	// are scheduled all the same.
	receive func() ([]T, error)
	// lane returns an item's lane; nil when items have no lanes. With one
	// worker, items run in the order they were received.
	lane func(T) laneKey
	// run runs one item on worker.
	run func(worker int, item T)
	// ran reports that n more items have run: run returned for each.
	ran func(n int)
	// room reports whether receive could return an item without waiting.
	room func() bool
	// waitsForRoom reports whether receive waits until items have run:
	// nothing more arrives before then. The batch scheduler's wake must be
	// called whenever it turns true (see window.onWait).
	waitsForRoom func() bool
}

// laneOf returns item's lane, or no lane when items have none.
func (j *jobs[T]) laneOf(item T) laneKey {
	if j.lane == nil {
		return laneKey{}
	}
	return j.lane(item)
}

// runner is a scheduler's life cycle, as Consumer.Run drives it.
type runner interface {
	// start starts intake and the workers.
	start()
	// intakeStopped is closed when receive has returned an error.
	intakeStopped() <-chan struct{}
	// stopIntake calls receive no more, waits for a call in progress
	// (which the caller makes return, by cancelling its context), and
	// returns the first error receive returned, or nil.
	stopIntake() error
	// stop makes the workers exit once nothing is left to run.
	stop()
	// wait waits until the workers have exited.
	wait()
}

// plainByDefault makes New use the plain scheduler: set by build tag
// oncely_plainsched, for the benchmarks that compare the two.
var plainByDefault = false

// newRunner returns the scheduler a Consumer runs on.
func newRunner(j jobs[Delivery], plain bool) runner {
	if plain {
		return newPlainScheduler(j)
	}
	return newScheduler(j)
}
