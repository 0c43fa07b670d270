package consumer

// endSoloLocked ends the solo run before another worker may run an item
// beside it, giving its items in flight what dispatch would have: the
// ones of its worker's last claim, which the worker runs (or has just run),
// hold their lanes, which the worker continues as usual once it has run
// them all; the ones it has not claimed are taken back, their lanes in
// arrival order (queued behind a busy one, or as tasks in the run queue).
// It returns how many were taken back. s.mu must be held.
func (s *scheduler[T]) endSoloLocked() int {
	w := s.solo
	s.solo = nil
	i := w.next.Load()
	for i < w.end && !w.next.CompareAndSwap(i, w.end) {
		i = w.next.Load()
	}
	claimed := min(i, w.end)
	// No lane was busy before: a lane found busy here is held by an
	// earlier item of the same claim, which w runs first.
	for _, d := range w.solo[min(soloClaimStart(i), claimed):claimed] {
		l, _ := s.laneOfLocked(d)
		if l == nil {
			continue
		}
		l.held++
		w.soloLanes = append(w.soloLanes, l)
	}
	for _, d := range w.solo[claimed:w.end] {
		if t, ok := s.placeLocked(d); ok {
			s.runq = append(s.runq, t)
		}
	}
	return int(w.end - claimed)
}

// soloClaimMax is the most items a solo run's worker claims at once.
// Claims start at one item and double with each claim, so a solo run
// whose first items are slow is taken back (see takeBackLocked) a
// item at a time, while a fast one costs an atomic add per 8
// items instead of one per item (an atomic add costs more than a
// fast item's own runtime work). The price: an item that turns slow
// in a fast solo run keeps up to soloClaimMax-1 items claimed behind
// it on its worker.
const soloClaimMax = 8

// soloClaimSize is the size of the solo run's claim that starts at index
// from: 1, 2, 4, then soloClaimMax, so claims end at 1, 3, 7, 15, 23, ...
func soloClaimSize(from int32) int32 { return min(from+1, soloClaimMax) }

// soloClaimStart returns where the solo run's claim that ends at index end
// (a claim boundary) starts.
func soloClaimStart(end int32) int32 {
	if end < 2*soloClaimMax {
		return max(end-1, 0) / 2
	}
	return end - soloClaimMax
}

// claimSolo claims the items of w's solo run that follow index from
// (the end of w's last claim, or 0) and returns them as [from, to); from ==
// to when none is left (all claimed, or the rest taken back by
// endSoloLocked).
func (w *schedWorker[T]) claimSolo(from int32) (int32, int32) {
	size := soloClaimSize(from)
	if i := w.next.Add(size) - size; i < w.end {
		return i, min(i+size, w.end)
	}
	return from, from
}

// runSoloLocked runs w's solo run, claiming its items a few at a time
// (see soloClaimMax), and returns the tasks that continue the lanes
// endSoloLocked gave the items of w's last claim, if it ended the run.
// s.mu must be held; it is released while the items run.
func (s *scheduler[T]) runSoloLocked(w *schedWorker[T]) []task[T] {
	ds := w.solo
	s.mu.Unlock()
	var ran int32
	for from, to := w.claimSolo(0); from < to; from, to = w.claimSolo(to) {
		for _, d := range ds[from:to] {
			s.run(w.id, d)
		}
		ran = to
	}
	s.ranLocking(int(ran))
	if s.solo == w {
		s.solo = nil
	}
	w.solo, w.end = nil, 0
	run := w.tasks[:0]
	for _, l := range w.soloLanes {
		if l.held--; l.held == 0 {
			run = s.continueLaneLocked(l, run)
		}
	}
	clear(w.soloLanes)
	w.soloLanes = w.soloLanes[:0]
	return run
}
