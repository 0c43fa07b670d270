package customs

import (
	"github.com/oncely/oncely/consumer"
	mw "github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store"
)

func middleware(st store.Store) []consumer.Middleware {
	return []consumer.Middleware{mw.Logging(), mw.Idempotency(st)}
}
