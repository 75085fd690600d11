package fabric

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/roce-probe/roce-probe/host"
)

// InputError is bad input: files that are not snapshots, agents that do
// not answer, hosts read twice. Each entry names its source.
type InputError struct {
	Errs []error
}

// Error lists the first errors, one per source.
func (e *InputError) Error() string {
	const max = 10
	var parts []string
	for i, err := range e.Errs {
		if i == max {
			parts = append(parts, fmt.Sprintf("and %d more", len(e.Errs)-max))
			break
		}
		parts = append(parts, err.Error())
	}
	return strings.Join(parts, "; ")
}

// Unwrap returns the errors, for errors.Is and errors.As.
func (e *InputError) Unwrap() []error { return e.Errs }

// inputError returns nil for no errors, else an *InputError of them.
func inputError(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return &InputError{Errs: errs}
}

// ExpandPaths returns paths with every directory replaced by the snapshot
// files in it (names ending in .json or .json.gz, sorted).
func ExpandPaths(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil || !st.IsDir() {
			out = append(out, p) // ReadFiles names what is wrong with it
			continue
		}
		ents, err := os.ReadDir(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		n := len(out)
		for _, e := range ents {
			if !e.IsDir() && (strings.HasSuffix(e.Name(), ".json") || strings.HasSuffix(e.Name(), ".json.gz")) {
				out = append(out, filepath.Join(p, e.Name()))
			}
		}
		if len(out) == n {
			return nil, fmt.Errorf("%s: a directory without snapshot files (*.json, *.json.gz)", p)
		}
		sort.Strings(out[n:])
	}
	return out, nil
}

// ReadFiles reads the snapshot files at paths, workers at a time (0: one
// per CPU), and returns each host's facts in the order of paths. Every
// file that cannot be read, is not a snapshot or has no hostname is an
// error naming it (*InputError); only the facts are kept, not the
// snapshots, so memory stays bounded by workers × one snapshot.
func ReadFiles(paths []string, workers int) ([]Host, error) {
	return readAll(len(paths), workers, func(i int) (Host, error) {
		s, err := host.LoadWith(paths[i], host.DecodeOptions{SkipCounters: true, SkipCensus: true})
		var pe *fs.PathError
		switch {
		case errors.As(err, &pe):
			return Host{}, fmt.Errorf("%s: %w: want a host snapshot written by 'roce-probe collect --out FILE'", paths[i], pe.Err)
		case err != nil:
			return Host{}, fmt.Errorf("%s: %w", paths[i], err)
		}
		return FromSnapshot(s, paths[i])
	})
}

// readAll runs read for 0..n-1 on workers goroutines and collects the
// results (hosts, pair detail) in order and every error.
func readAll[T any](n, workers int, read func(i int) (T, error)) ([]T, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if workers > n {
		workers = n
	}
	hosts := make([]T, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				hosts[i], errs[i] = read(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	var bad []error
	for _, err := range errs {
		if err != nil {
			bad = append(bad, err)
		}
	}
	if err := inputError(bad); err != nil {
		return nil, err
	}
	return hosts, nil
}

// AgentOptions bound how agents are asked.
type AgentOptions struct {
	// Timeout bounds each request, connection to last byte (0: 10 s).
	Timeout time.Duration
	// Concurrency is how many agents are asked at once (0: 16).
	Concurrency int
	// MaxBytes bounds a snapshot's size, as read and decompressed (0:
	// host.MaxSnapshotBytes, the limit of every snapshot reader).
	MaxBytes int64
	// Client is the HTTP client (nil: a default one).
	Client *http.Client
}

// SnapshotURL turns an agent address into the URL of its snapshot:
// "host:port" gets http://, and a URL without a path gets /snapshot.
func SnapshotURL(agent string) (string, error) {
	raw := agent
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("agent %q: not a URL: want http://HOST:PORT or HOST:PORT", agent)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("agent %q: scheme %q: want http or https", agent, u.Scheme)
	}
	if u.Host == "" {
		return "", fmt.Errorf("agent %q: no host: want http://HOST:PORT or HOST:PORT", agent)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/snapshot"
	}
	return u.String(), nil
}

// withDefaults is o with its defaults filled in (Timeout 10 s,
// Concurrency 16) and the client to use (o.Client, else a new one), for
// ReadAgents and ReadAgentPairs.
func (o AgentOptions) withDefaults() (AgentOptions, *http.Client) {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 16
	}
	client := o.Client
	if client == nil {
		client = &http.Client{}
	}
	return o, client
}

// agentURLs makes each agent's URL with urlOf (SnapshotURL, PairsURL);
// every bad agent is named in one *InputError.
func agentURLs(agents []string, urlOf func(string) (string, error)) ([]string, error) {
	urls := make([]string, len(agents))
	var bad []error
	for i, a := range agents {
		u, err := urlOf(a)
		if err != nil {
			bad = append(bad, err)
		}
		urls[i] = u
	}
	if err := inputError(bad); err != nil {
		return nil, err
	}
	return urls, nil
}

// ReadAgents asks each agent for its snapshot (GET /snapshot, the
// document collect writes), o.Concurrency at a time, each within
// o.Timeout, and returns the hosts' facts in the order of agents. An agent
// that cannot be reached, answers with another status or sends something
// that is not a snapshot is an error naming it (*InputError).
func ReadAgents(ctx context.Context, agents []string, o AgentOptions) ([]Host, error) {
	o, client := o.withDefaults()
	urls, err := agentURLs(agents, SnapshotURL)
	if err != nil {
		return nil, err
	}
	return readAll(len(urls), o.Concurrency, func(i int) (Host, error) {
		s, err := fetchSnapshot(ctx, client, urls[i], o)
		if err != nil {
			return Host{}, fmt.Errorf("agent %s: %w", urls[i], err)
		}
		return FromSnapshot(s, urls[i])
	})
}

func fetchSnapshot(ctx context.Context, client *http.Client, u string, o AgentOptions) (*host.Snapshot, error) {
	var s *host.Snapshot
	err := agentGet(ctx, client, u, o, func(body io.Reader) (err error) {
		s, err = host.DecodeWith(body, host.DecodeOptions{SkipCounters: true, SkipCensus: true, MaxBytes: o.MaxBytes})
		return err
	})
	return s, err
}

// agentGet asks an agent for u within o.Timeout and decodes its answer
// (HTTP 200 only) with decode: the one way fabric reads an agent.
func agentGet(ctx context.Context, client *http.Client, u string, o AgentOptions, decode func(io.Reader) error) error {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("no answer within %s", o.Timeout)
		}
		return unwrapURLError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		return &statusError{resp.StatusCode, fmt.Sprintf("HTTP %s: %s", resp.Status, firstLine(string(b)))}
	}
	if err := decode(resp.Body); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("no complete answer within %s", o.Timeout)
		}
		return err
	}
	return nil
}

// statusError is an agent's answer other than HTTP 200.
type statusError struct {
	code int
	msg  string
}

func (e *statusError) Error() string { return e.msg }

// isNotFound says err is an agent's HTTP 404.
func isNotFound(err error) bool {
	var se *statusError
	return errors.As(err, &se) && se.code == http.StatusNotFound
}

// unwrapURLError drops net/http's "Get "URL": " prefix: the caller names
// the URL.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if s == "" {
		return "(no body)"
	}
	return s
}
