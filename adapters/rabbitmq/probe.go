package rabbitmq

import (
	"context"
	"fmt"
)

// Probe reports whether the broker answers on this Source's connection: a
// passive declare of the source queue on a channel of its own (three small
// RPCs, no message touched). It fails with ErrNotConnected while the
// supervisor is reconnecting, and with ctx's error when the broker does not
// answer in time; the RPC then goes on in the background, bounded by
// Config.RPCTimeout, so a short probe deadline never closes a connection
// that is merely slow.
func (src *Source) Probe(ctx context.Context) error {
	src.mu.Lock()
	sess, closed := src.cur, src.closed
	src.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("rabbitmq: probe: %w", err)
	}
	if closed || sess == nil || sess.isLost() {
		return fmt.Errorf("rabbitmq: probe: %w", ErrNotConnected)
	}
	done := make(chan error, 1)
	src.settling.add() // Close waits for it before closing the connection
	src.wg.Go(func() {
		defer src.settling.done()
		_, err := src.depths(context.Background(), sess.conn, []string{src.cfg.Queue})
		done <- err
	})
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("rabbitmq: probe: %w", err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("rabbitmq: probe: no answer: %w", ctx.Err())
	case <-sess.lost:
		return fmt.Errorf("rabbitmq: probe: %w", ErrNotConnected)
	}
}
