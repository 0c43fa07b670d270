package fraudscore

import (
	"net/http"

	"cloud.google.com/go/pubsub"
)

// reloadHandler serves POST /admin/rules/reload: it drops the cached rules
// and tells the other scorer replicas to do the same.
func reloadHandler(r *rules, peers *pubsub.Topic) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.current = nil
		r.mu.Unlock()
		if _, err := peers.Publish(req.Context(), &pubsub.Message{Data: []byte("reload")}).Get(req.Context()); err != nil {
			http.Error(w, "peers not told", http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}
}
