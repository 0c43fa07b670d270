// Package platformdb holds the process's database access, opened once at
// start by Init: the generated queries over the pool.
package platformdb

import (
	"corpus/internal/orderdb"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Orders are the order queries over the process's pool.
var Orders *orderdb.Queries

// Init binds the queries to pool.
func Init(pool *pgxpool.Pool) {
	Orders = orderdb.New(pool)
}
