package roce

import (
	"encoding/hex"
	"strings"
	"testing"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(strings.ReplaceAll(s, "|", " ")), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Known-answer vectors: kernel-algorithms.md §5.3 (from an independent Rust
// RoCE implementation's unit tests). Bytes start at the IPv4 header and end
// with the ICRC trailer as it is on the wire.
var icrcVectors = []struct {
	name, pkt, trailer string
}{
	{
		name: "IPv4 RC RDMA WRITE ONLY 128 bytes",
		pkt: `45 00 00 bc 00 01 00 00 40 11 f8 da c0 a8 00 02 c0 a8 00 03
		| 12 b7 12 b7 00 a8 00 00
		| 0a 80 00 00 00 00 00 02 80 00 00 00
		| 00 00 7f 7e 91 00 00 00 01 70 9a 33 00 00 00 80` + strings.Repeat(" ff", 128),
		trailer: "c6 87 22 98",
	},
	{
		name: "IPv4 opcode 0x11 8 zero bytes",
		pkt: `45 00 00 00 00 00 00 00 40 11 7c e8 7f 00 00 03 7f 00 00 02
		| 12 b7 12 b7 00 20 00 00
		| 11 00 00 00 00 00 00 02 00 00 00 00
		| 00 00 00 00 00 00 00 00`,
		trailer: "40 21 a3 cf",
	},
}

func TestICRCKnownAnswers(t *testing.T) {
	for _, v := range icrcVectors {
		t.Run(v.name, func(t *testing.T) {
			pkt := unhex(t, v.pkt)
			want := unhex(t, v.trailer)
			got, err := ICRC(pkt)
			if err != nil {
				t.Fatal(err)
			}
			var b [4]byte
			PutICRC(b[:], got)
			if hex.EncodeToString(b[:]) != hex.EncodeToString(want) {
				t.Fatalf("ICRC wire bytes = % x, want % x", b, want)
			}
			full := append(append([]byte{}, pkt...), want...)
			if _, ok, err := VerifyICRC(full); err != nil || !ok {
				t.Fatalf("VerifyICRC = %v, %v; want valid", ok, err)
			}
			// Masked fields do not change the ICRC; covered fields do.
			m := append([]byte{}, full...)
			m[1], m[8], m[10] = 0x6a, 3, 0x12 // TOS, TTL, checksum
			m[20+6], m[20+7] = 0xab, 0xcd     // UDP checksum
			m[28+4] = 0xC0                    // FECN | BECN
			if _, ok, _ := VerifyICRC(m); !ok {
				t.Error("changing masked fields (TOS, TTL, IP/UDP checksums, FECN/BECN) broke the ICRC")
			}
			for _, i := range []int{2, 12, 20, 28, 28 + 2, 28 + 5, 28 + 11, len(full) - 5} {
				c := append([]byte{}, full...)
				c[i] ^= 0x01
				if _, ok, _ := VerifyICRC(c); ok {
					t.Errorf("flipping a bit of covered byte %d left the ICRC valid", i)
				}
			}
		})
	}
}

func TestICRCNotRoCE(t *testing.T) {
	for _, tc := range []struct{ name, pkt, want string }{
		{"empty", "", "empty packet"},
		{"IPv5", "50" + strings.Repeat("00", 60), "IP version 5"},
		{"short IPv4", "4500", "IPv4 packet 2 bytes, want at least 40"},
		{"TCP", "450000000000000040067ce87f0000037f000002" + strings.Repeat("00", 40), "protocol 6, want 17"},
		{"IPv6 TCP", "6000000000000640" + strings.Repeat("00", 60), "next header 6"},
	} {
		_, err := ICRC(unhex(t, tc.pkt))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
}

// The two ways of computing the ICRC (masking byte by byte, and masking a
// copied prefix) agree on the vectors and on frames of every
// encapsulation and length.
func TestICRCPathsMatch(t *testing.T) {
	var scratch [prefixLen]byte
	for _, v := range icrcVectors {
		pkt := unhex(t, v.pkt)
		a, _ := icrcMasked(pkt)
		b, ok := icrcPrefix(pkt, &scratch)
		if ok && a != b {
			t.Fatalf("%s: masked %#x, prefix %#x", v.name, a, b)
		}
	}
	for i, e := range encaps {
		for n := 0; n < 70; n++ {
			f := specFor(e, OpcodeUDSendOnly, i*100+n)
			f.payload = make([]byte, n)
			frame := buildFrame(t, f)
			pkt, err := roceNetworkPacket(frame)
			if err != nil {
				t.Fatal(err)
			}
			pkt = pkt[:len(pkt)-ICRCLen]
			a, _ := icrcMasked(pkt)
			b, ok := icrcPrefix(pkt, &scratch)
			if ok && a != b || !ok && len(pkt) >= prefixLen-8 {
				t.Fatalf("%s payload %d: masked %#x, prefix %#x %v", e.name, n, a, b, ok)
			}
		}
	}
}
