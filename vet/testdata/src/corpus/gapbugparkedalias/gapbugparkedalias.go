// Package gapbugparkedalias is a corpus handler package with a bug (see
// vet/corpus_test.go): the handler stores its transaction in a session
// kept in a map on the receiver, looked up through a method; a ticker
// loop writes through it later, after the claim's transaction ended.
package gapbugparkedalias

import (
	"context"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type session struct {
	tx    pgx.Tx
	scans int
}

type sessions struct {
	mu   sync.Mutex
	byID map[string]*session
}

func (s *sessions) get(id string) *session {
	v, ok := s.byID[id]
	if !ok {
		v = &session{}
		s.byID[id] = v
	}
	return v
}

type handler struct{ sessions *sessions }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	h.sessions.mu.Lock()
	defer h.sessions.mu.Unlock()
	v := h.sessions.get(m.Key)
	v.scans++
	v.tx = tx // want `the handler's transaction tx is stored in v.tx`
	return nil
}

// New builds the handler.
func New() consumer.Handler {
	return postgres.HandlerFunc((&handler{sessions: &sessions{byID: map[string]*session{}}}).handle)
}
