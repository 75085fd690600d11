package main

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
)

// -o json prints one JSON document per invocation, in every command: an
// object, or an array when the command reports one thing per port or per
// packet. Commands whose output is a stream (decode, counters --watch,
// send, listen) write that document as it grows — the array's elements as
// they come, the closing bracket at the end (also when interrupted) — and
// also take -o ndjson: one JSON value per line, for jq --stream-less
// pipelines and log shippers that act on each line as it arrives.

// ndjson is the name of the streaming format.
const ndjson = "ndjson"

// jsonArray writes a JSON array element by element, each on a line of
// its own; open and close surround it ("[" and "]" for a plain array; a
// key can come first: `{"probes": [`). Safe for concurrent add.
type jsonArray struct {
	w           io.Writer
	open, close string
	mu          sync.Mutex
	n           int
	err         error
}

func newJSONArray(w io.Writer) *jsonArray { return &jsonArray{w: w, open: "[", close: "]"} }

// add writes v as the next element.
func (a *jsonArray) add(v any) error {
	b, err := compactJSON(v)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	sep := ",\n"
	if a.n == 0 {
		sep = a.open + "\n"
	}
	a.n++
	if a.err == nil {
		_, a.err = io.WriteString(a.w, sep+string(b))
	}
	return a.err
}

// end closes the array (an empty one prints open and close alone);
// after it, what follows close is the caller's.
func (a *jsonArray) end() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := "\n" + a.close
	if a.n == 0 {
		s = a.open + a.close
	}
	if a.err == nil {
		_, a.err = io.WriteString(a.w, s)
	}
	return a.err
}

// compactJSON is v as JSON on one line, without HTML escaping (as
// writeJSON writes it) and without the newline.
func compactJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// jsonRun is the -o json document of send and listen: {"LIST": [the
// items, one per line, as they come], "totals": the summary}.
type jsonRun struct{ arr *jsonArray }

func newJSONRun(w io.Writer, list string) *jsonRun {
	return &jsonRun{&jsonArray{w: w, open: `{"` + list + `": [`, close: `], "totals": `}}
}

func (r *jsonRun) add(v any) error { return r.arr.add(v) }

// end writes the totals and closes the document.
func (r *jsonRun) end(totals any) error {
	if err := r.arr.end(); err != nil {
		return err
	}
	b, err := compactJSON(totals)
	if err != nil {
		return err
	}
	_, err = io.WriteString(r.arr.w, string(b)+"}\n")
	return err
}
