//go:build faults

package postgres_test

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/internal/envtest"
	"github.com/oncely/oncely/internal/pgtest"
)

// pgCluster runs pg_ctlcluster on the local cluster: the only version under
// /etc/postgresql, cluster PG_FAULT_CLUSTER (default "main", the server
// TEST_DATABASE_URL points at by default; set both to run against a private
// cluster).
func pgCluster(t *testing.T, action string) error {
	t.Helper()
	versions, err := os.ReadDir("/etc/postgresql")
	if err == nil && len(versions) != 1 {
		err = fmt.Errorf("%d PostgreSQL versions under /etc/postgresql, want 1", len(versions))
	}
	if err != nil {
		envtest.Missing(t, "a local PostgreSQL cluster to stop and start", err)
	}
	cluster := os.Getenv("PG_FAULT_CLUSTER")
	if cluster == "" {
		cluster = "main"
	}
	args := []string{"--skip-systemctl-redirect", versions[0].Name(), cluster, action}
	if action == "stop" {
		args = append(args, "--", "-m", "fast")
	}
	out, err := exec.Command("pg_ctlcluster", args...).CombinedOutput()
	if err != nil {
		t.Logf("pg_ctlcluster %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return err
}

// TestFaultClusterStopIsNotPoison stops the real PostgreSQL cluster
// mid-stream and starts it again: nothing is dead-lettered or acked during the
// outage, the breaker opens, and afterwards every message is applied once.
func TestFaultClusterStopIsNotPoison(t *testing.T) {
	for name, tc := range outageCases {
		t.Run(name, func(t *testing.T) {
			db := pgtest.New(t)
			pool := db.NewPool(t, nil)
			stopped := false
			t.Cleanup(func() {
				if stopped {
					_ = pgCluster(t, "start") // always bring the shared server back
				}
			})
			// Enough messages that the stream is still flowing when the
			// cluster's shutdown takes effect (stopping takes a few hundred
			// milliseconds; batch mode drains 400 messages faster than that).
			r := startOutageRig(t, db, pool, 5000, tc.store, tc.handlerBatch)
			r.waitProcessed(100)
			stopped = true
			require.NoError(t, pgCluster(t, "stop"))
			r.holdOutage()
			require.NoError(t, pgCluster(t, "start"))
			stopped = false
			r.finish()
		})
	}
}
