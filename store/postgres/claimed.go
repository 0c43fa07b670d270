package postgres

import (
	"context"
	"fmt"
)

// Claimed reports which of messageIDs have a claim for consumerName: their
// handler committed, so delivering them again (a dead-letter redrive, say)
// would be absorbed as a duplicate. It reads in one query per 10,000 IDs and
// writes nothing. A claim pruned after Config.Retention no longer counts.
func (s *Store) Claimed(ctx context.Context, consumerName string, messageIDs []string) (map[string]bool, error) {
	out := make(map[string]bool)
	const chunk = 10_000
	for start := 0; start < len(messageIDs); start += chunk {
		ids := messageIDs[start:min(start+chunk, len(messageIDs))]
		rows, err := s.pool.Query(ctx, "SELECT message_id FROM "+s.table+" WHERE consumer = $1 AND message_id = ANY($2::text[])", consumerName, ids)
		if err != nil {
			return nil, fmt.Errorf("postgres store: reading claims: %w", err)
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, fmt.Errorf("postgres store: reading claims: %w", err)
			}
			out[id] = true
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("postgres store: reading claims: %w", err)
		}
	}
	return out, nil
}
