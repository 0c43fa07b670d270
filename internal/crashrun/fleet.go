package crashrun

import (
	"fmt"
	"net/url"
	"strings"
	"sync"
)

// fleet is the ledger processes of a run: Config.Instances of them, all
// consuming as the same consumer, started together each round.
type fleet struct {
	prog *program
	// urls holds each instance's BROKER_URL (see instanceURL).
	urls  []string
	procs []*process
}

func newFleet(prog *program, brokerURL string, instances int) (*fleet, error) {
	f := &fleet{prog: prog, procs: make([]*process, instances)}
	for i := range instances {
		u, err := instanceURL(brokerURL, i, instances)
		if err != nil {
			return nil, err
		}
		f.urls = append(f.urls, u)
	}
	return f, nil
}

// instanceURL is instance i's broker URL: brokerURL itself, except that with
// more than one instance an instance_id parameter (Kafka static membership)
// gets the suffix "-i", so that the instances are distinct static members
// of the group and a restarted instance takes its own partitions back.
func instanceURL(brokerURL string, i, instances int) (string, error) {
	if instances < 2 || !strings.Contains(brokerURL, "instance_id=") {
		return brokerURL, nil
	}
	u, err := url.Parse(brokerURL)
	if err != nil {
		return "", fmt.Errorf("crashtest: the broker URL: %w", err)
	}
	q := u.Query()
	id := q.Get("instance_id")
	if id == "" {
		return brokerURL, nil
	}
	q.Set("instance_id", fmt.Sprintf("%s-%d", id, i))
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// start starts instance i as a process named name.
func (f *fleet) start(i int, name string) error {
	p, err := f.prog.start(name, "BROKER_URL="+f.urls[i])
	if err != nil {
		return err
	}
	f.procs[i] = p
	return nil
}

// startAll starts every instance, one right after the other, named
// prefix-0, prefix-1, …; on an error it kills those it started.
func (f *fleet) startAll(prefix string) error {
	for i := range f.procs {
		if err := f.start(i, fmt.Sprintf("%s-%d", prefix, i)); err != nil {
			f.killAll()
			return err
		}
	}
	return nil
}

// kill SIGKILLs the instances in victims at once and waits until they are
// gone.
func (f *fleet) kill(victims []int) {
	var wg sync.WaitGroup
	for _, i := range victims {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.procs[i].kill()
		}()
	}
	wg.Wait()
}

// killAll SIGKILLs every running instance (after a failed round).
func (f *fleet) killAll() {
	var running []int
	for i, p := range f.procs {
		if p != nil {
			running = append(running, i)
		}
	}
	f.kill(running)
}

// stopAll stops every instance with SIGTERM at once (see process.stop) and
// records unclean exits in res.
func (f *fleet) stopAll(res *Result) {
	clean := make([]bool, len(f.procs))
	var wg sync.WaitGroup
	for i, p := range f.procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			clean[i] = p.stop(StopTimeoutDefault)
		}()
	}
	wg.Wait()
	for i, p := range f.procs {
		if !clean[i] {
			res.unclean(p)
		}
	}
	clear(f.procs)
}
