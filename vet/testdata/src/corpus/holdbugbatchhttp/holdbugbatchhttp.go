// Package holdbugbatchhttp is a held-out corpus package: a webhook sent
// from a batch claim's callback.
package holdbugbatchhttp

import (
	"context"
	"net/http"
	"strings"

	"github.com/oncely/oncely/store/postgres"
)

func Notify(ctx context.Context, st *postgres.Store, ids []string) error {
	_, err := st.ProcessBatch(ctx, "webhooks", ids, func(ctx context.Context, fresh []int) error {
		for _, i := range fresh {
			resp, err := http.Post("https://hooks.example/"+ids[i], "text/plain", strings.NewReader(ids[i])) // want `use the outbox`
			if err != nil {
				return err
			}
			resp.Body.Close()
		}
		return nil
	})
	return err
}
