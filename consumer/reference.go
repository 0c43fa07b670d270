package consumer

// The plain scheduler (see scheduler) is the reference for the runtime's own
// (see dispatchLocked and runWorker): a Consumer runs on it when
// plainByDefault is set (build tag oncely_plainsched, for benchmarks) or a
// test asks for it. One intake goroutine receives and schedules; the
// scheduler's workers run process with the same per-worker state as the
// runtime's workers. Randomized property tests run both on the same inputs.
//
// The runtime's own scheduler is the clever one; it stays only because it
// wins on a broker-backed benchmark by more than 3 %: Kafka throughput 0.81–0.87
// of franz-go against 0.72–0.76 for this one, at 25 % less CPU per record
// (docs/benchmarks.md, "Complexity that pays for itself"). Should a change
// make that margin vanish, this scheduler becomes the only one.

// plainByDefault makes New use the plain scheduler.
var plainByDefault = false

// usePlain makes c run on the plain scheduler; before Run only.
func (c *Consumer) usePlain() {
	c.plain = newScheduler(c.runPlain)
}

// startPlainLocked starts the plain scheduler's workers and its intake
// goroutine; c.mu must be held.
func (c *Consumer) startPlainLocked() {
	c.receiving = true
	c.plain.start(len(c.workers))
	c.goroutines.Go(c.receivePlain)
}

// receivePlain receives (see intake) and schedules the deliveries, whose
// window slots are taken, on their lanes, until intake must stop.
func (c *Consumer) receivePlain() {
	for {
		ds, err := c.intake(c.intakeCtx)
		c.plain.schedule(ds, c.plainLane)
		if err != nil {
			c.mu.Lock()
			c.endIntakeLocked(err)
			c.mu.Unlock()
			return
		}
	}
}

func (c *Consumer) plainLane(d Delivery) laneKey { return laneKeyOf(&c.cfg, d.Message()) }

// runPlain is the plain scheduler's: worker w runs d to its settlement or
// abandonment, then frees its window slot.
func (c *Consumer) runPlain(w int, d Delivery) {
	c.process(c.workers[w], d)
	c.window.release(1)
}
