package rocegen

import (
	"crypto/sha256"
	"fmt"
	"testing"
)

// The frames rocegen builds with roce.FrameSpec are the bytes its own layer
// assembly built before: the SHA-256 below is of Synthetic(64) and Edges()
// written by that code. (Sample is checked byte for byte against
// roce/testdata/sample.pcapng by roce/capture's TestSampleCapture.)
func TestFramesUnchanged(t *testing.T) {
	h := sha256.New()
	for _, f := range Synthetic(64) {
		h.Write(f.Data)
	}
	for _, e := range Edges() {
		h.Write(e.Data)
	}
	if got, want := fmt.Sprintf("%x", h.Sum(nil)), "231ce4ccd1426f9b74d76f529b70bf980afea56ea004c249ee4951be58c876c6"; got != want {
		t.Errorf("SHA-256 of the frames %s, want %s", got, want)
	}
}
