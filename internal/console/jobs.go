package console

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/oncely/oncely/adapters"
)

// Job states.
const (
	jobRunning   = "running"
	jobDone      = "done"
	jobCancelled = "cancelled"
	jobFailed    = "failed"
)

// jobsKept is how many finished jobs the jobs page remembers.
const jobsKept = 100

// job is one redrive running in the background.
type job struct {
	ID     string
	Target target
	Filter Filter
	Actor  string
	// Client and Session are where the job was started from (AuditEntry).
	Client  string
	Session string
	Rate    float64
	Limit   int
	Started time.Time
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	state   jobState
}

// jobState is a job's progress and outcome; a copy is safe to read.
type jobState struct {
	Status      string    `json:"status"`
	Seen        int       `json:"seen"`
	Total       int       `json:"total"`
	Redriven    int       `json:"redriven"`
	Skipped     int       `json:"skipped"`
	Duplicates  int       `json:"duplicate_copies"`
	Error       string    `json:"error,omitempty"`
	CancelledBy string    `json:"cancelled_by,omitempty"`
	Finished    time.Time `json:"finished,omitzero"`
}

// State returns a copy of the job's state.
func (j *job) State() jobState {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.state
}

func (j *job) progress(p adapters.RedriveProgress) {
	j.mu.Lock()
	j.state.Seen, j.state.Total, j.state.Redriven = p.Seen, p.Total, p.Redriven
	j.state.Skipped, j.state.Duplicates = p.Skipped, p.DuplicateCopies
	j.mu.Unlock()
}

// requestCancel asks the job to stop between two messages, unless it
// ended or was asked already.
func (j *job) requestCancel(by string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.state.Status != jobRunning || j.state.CancelledBy != "" {
		return
	}
	j.state.CancelledBy = by
	j.cancel()
}

// startJob writes the start audit row and runs j's redrive in the
// background; the end writes the other row. Nothing starts when the
// first row cannot be written.
func (s *Server) startJob(ctx context.Context, j *job) error {
	s.jobsMu.Lock()
	closed := s.closedJobs
	s.jobsMu.Unlock()
	if closed {
		return httpErrorf(http.StatusServiceUnavailable, "the console is shutting down")
	}
	j.ID = base64.RawURLEncoding.EncodeToString(randomBytes(9))
	j.Started = time.Now()
	j.state.Status = jobRunning
	j.done = make(chan struct{})
	if _, err := s.audit.write(ctx, AuditEntry{Actor: j.Actor, Client: j.Client, Session: j.Session,
		Action: actionRedriveStart, Source: j.Target.Source, Consumer: j.Target.Consumer,
		Selection: j.Filter.String(), Job: j.ID, Outcome: fmt.Sprintf("started at %g/s", j.Rate), Counts: map[string]int{"limit": j.Limit}}); err != nil {
		return err
	}
	jctx, cancel := context.WithCancel(s.jobsCtx)
	j.cancel = cancel
	s.jobsMu.Lock()
	if s.closedJobs {
		// Close ran meanwhile: the job runs at once into its cancelled
		// context and writes its end row, but is not added after Wait.
		s.jobsMu.Unlock()
		cancel()
		return httpErrorf(http.StatusServiceUnavailable, "the console is shutting down")
	}
	s.jobs[j.ID] = j
	s.jobOrder = append(s.jobOrder, j.ID)
	s.forgetOldJobsLocked()
	s.jobsWG.Add(1)
	s.jobsMu.Unlock()
	go func() {
		defer s.jobsWG.Done()
		defer close(j.done)
		defer cancel()
		s.runJob(jctx, j)
	}()
	return nil
}

func (s *Server) runJob(ctx context.Context, j *job) {
	var taken idRecorder
	res, err := s.cfg.Broker.Redrive(ctx, j.Target.Source, j.Target.Consumer, adapters.RedriveOptions{
		Match: taken.match(j.Filter), Rate: j.Rate, Limit: j.Limit, Progress: j.progress})
	j.mu.Lock()
	st := &j.state
	st.Seen, st.Redriven, st.Skipped, st.Duplicates, st.Finished = res.Seen, res.Redriven, res.Skipped, res.DuplicateCopies, time.Now()
	switch {
	case err == nil:
		st.Status = jobDone
	case errors.Is(err, context.Canceled) && (st.CancelledBy != "" || s.jobsCtx.Err() != nil):
		st.Status = jobCancelled
		if st.CancelledBy == "" {
			st.CancelledBy = "shutdown"
		}
	default:
		st.Status, st.Error = jobFailed, err.Error()
	}
	state := *st
	j.mu.Unlock()
	outcome := state.Status
	if state.Error != "" {
		outcome += ": " + state.Error
	}
	if state.CancelledBy != "" {
		outcome += " by " + state.CancelledBy
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	row := AuditEntry{Actor: j.Actor, Client: j.Client, Session: j.Session,
		Action: actionRedriveEnd, Source: j.Target.Source, Consumer: j.Target.Consumer,
		Selection: j.Filter.String(), Job: j.ID, Outcome: outcome, Counts: map[string]int{"seen": state.Seen, "redriven": state.Redriven,
			"skipped": state.Skipped, "duplicate_copies": state.Duplicates}}
	taken.record(&row)
	if _, err := s.audit.write(actx, row); err != nil {
		s.log.Error("console: the end of a redrive is not in the audit table", "job", j.ID, "error", err)
	}
	s.log.Info("console: redrive ended", "job", j.ID, "source", j.Target.Source, "consumer", j.Target.Consumer, "outcome", outcome,
		"redriven", state.Redriven, "seen", state.Seen)
}

// forgetOldJobsLocked drops the oldest finished jobs beyond jobsKept.
func (s *Server) forgetOldJobsLocked() {
	for len(s.jobOrder) > jobsKept {
		dropped := false
		for i, id := range s.jobOrder {
			if s.jobs[id].State().Status != jobRunning {
				delete(s.jobs, id)
				s.jobOrder = append(s.jobOrder[:i], s.jobOrder[i+1:]...)
				dropped = true
				break
			}
		}
		if !dropped {
			return
		}
	}
}

func (s *Server) job(id string) *job {
	s.jobsMu.Lock()
	defer s.jobsMu.Unlock()
	return s.jobs[id]
}

// jobList returns the jobs, newest first.
func (s *Server) jobList() []*job {
	s.jobsMu.Lock()
	defer s.jobsMu.Unlock()
	out := make([]*job, 0, len(s.jobOrder))
	for i := len(s.jobOrder) - 1; i >= 0; i-- {
		out = append(out, s.jobs[s.jobOrder[i]])
	}
	return out
}
