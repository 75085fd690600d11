package fabric

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roce-probe/roce-probe/host"
)

// bomb is a gzip-compressed snapshot that decompresses to twice
// host.MaxSnapshotBytes (a hostname that never ends), in some 130 KB.
func bomb(t *testing.T) []byte {
	t.Helper()
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	zw.Write([]byte(`{"format":"roce-probe-snapshot","version":1,"hostname":"`))
	chunk := bytes.Repeat([]byte("a"), 1<<20)
	for i := 0; i < 2*host.MaxSnapshotBytes>>20; i++ {
		zw.Write(chunk)
	}
	zw.Write([]byte(`"}`))
	zw.Close()
	return gz.Bytes()
}

// One decompression bomb among the snapshots of fabric --from DIR is an
// error naming that file and the limit; the good file is not named.
func TestReadFilesBomb(t *testing.T) {
	good, err := os.ReadFile(filepath.Join(hostTestdata, "rxe.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "good.json"), good, 0o644)
	os.WriteFile(filepath.Join(dir, "bomb.json.gz"), bomb(t), 0o644)
	paths, err := ExpandPaths([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ReadFiles(paths, 2)
	var ie *InputError
	if !errors.As(err, &ie) || len(ie.Errs) != 1 || !errors.Is(err, host.ErrTooLarge) {
		t.Fatalf("ReadFiles = %v, want one error, too large", err)
	}
	want := filepath.Join(dir, "bomb.json.gz") + ": the decompressed snapshot is larger than 64 MiB (67108864 bytes)"
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("%v\nwant %q", err, want)
	}
}

// countingBody counts what the client reads of a response.
type countingBody struct {
	io.ReadCloser
	n *int64
}

func (c countingBody) Read(p []byte) (int, error) {
	k, err := c.ReadCloser.Read(p)
	*c.n += int64(k)
	return k, err
}

type countingTransport struct{ n *int64 }

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		resp.Body = countingBody{resp.Body, c.n}
	}
	return resp, err
}

// An agent sending a decompression bomb is read through the same limit as
// a file: refused once the limit is decompressed, having read about half
// of the bomb.
func TestReadAgentsBomb(t *testing.T) {
	b := bomb(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(b) }))
	defer srv.Close()
	var n int64
	_, err := ReadAgents(context.Background(), []string{srv.URL}, AgentOptions{Client: &http.Client{Transport: countingTransport{&n}}})
	want := "agent " + srv.URL + "/snapshot: the decompressed snapshot is larger than 64 MiB"
	if !errors.Is(err, host.ErrTooLarge) || !strings.Contains(err.Error(), want) {
		t.Fatalf("ReadAgents = %v, want %q", err, want)
	}
	if max := int64(len(b)) * 60 / 100; n > max {
		t.Errorf("read %d of the bomb's %d bytes, want at most %d (60 %%: the limit is half of it)", n, len(b), max)
	}
}

// A Prometheus answer past its limits is refused before it is decoded.
func TestPrometheusLimits(t *testing.T) {
	many := `{"status":"success","data":{"resultType":"vector","result":[` + strings.Repeat(`{},`, MaxPrometheusObjects) + `{}]}}`
	_, err := DecodeVector(strings.NewReader(many))
	if !errors.Is(err, host.ErrTooLarge) || !strings.Contains(err.Error(), "the Prometheus response has more than 2097152 objects and arrays (at data.result[2097149])") {
		t.Errorf("DecodeVector(%d series) = %v", MaxPrometheusObjects+1, err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[]}}` + strings.Repeat(" ", 2000)))
	}))
	defer srv.Close()
	_, err = Query(context.Background(), srv.URL, "up", PrometheusOptions{MaxBytes: 1000})
	if !errors.Is(err, host.ErrTooLarge) || !strings.Contains(err.Error(), "prometheus "+srv.URL+": the answer to up is larger than 1000 bytes") {
		t.Errorf("Query of 2 KB, MaxBytes 1000: %v", err)
	}
}
