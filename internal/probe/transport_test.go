package probe

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"testing"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	s = strings.NewReplacer(" ", "", "\n", "", "|", "", "\t", "").Replace(s)
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The two ICRC vectors of kernel-algorithms.md §5.3 (from an independent
// RoCE implementation's unit tests).
func TestICRCKnownAnswers(t *testing.T) {
	v1 := unhex(t, `45 00 00 bc 00 01 00 00 40 11 f8 da c0 a8 00 02 c0 a8 00 03
		12 b7 12 b7 00 a8 00 00
		0a 80 00 00 00 00 00 02 80 00 00 00
		00 00 7f 7e 91 00 00 00 01 70 9a 33 00 00 00 80`)
	v1 = append(v1, bytes.Repeat([]byte{0xff}, 128)...)
	v2 := unhex(t, `45 00 00 00 00 00 00 00 40 11 7c e8 7f 00 00 03 7f 00 00 02
		12 b7 12 b7 00 20 00 00
		11 00 00 00 00 00 00 02 00 00 00 00
		00 00 00 00 00 00 00 00`)
	for _, tc := range []struct {
		name string
		pkt  []byte
		wire string
	}{{"rdma-write-only", v1, "c6872298"}, {"ack-like", v2, "4021a3cf"}} {
		var got [4]byte
		binary.LittleEndian.PutUint32(got[:], ICRC(tc.pkt))
		if hex.EncodeToString(got[:]) != tc.wire {
			t.Errorf("%s: ICRC on the wire = %x, want %s", tc.name, got, tc.wire)
		}
	}
}
