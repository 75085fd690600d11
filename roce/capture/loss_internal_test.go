package capture

import (
	"reflect"
	"testing"
)

// elementsOf decodes fuzz bytes into a PSN sequence: 4 bytes per element,
// a PSN step (so that sequences go on, back and over gaps, and wrap) and a
// class with, for READs, a length.
func elementsOf(data []byte) []psnRun {
	var out []psnRun
	psn := uint32(0xFFFFF8)
	for ; len(data) >= 4; data = data[4:] {
		step := int32(int8(data[0]))
		if data[1]&0x80 != 0 {
			step = 1 // mostly in order
		}
		psn = (psn + uint32(step)) & psnMask
		c := []seqClass{seqRequest, seqRequest, seqRead, seqRespStart, seqRespCont}[int(data[1]&0x7F)%5]
		n := uint32(data[2]) << 4 * uint32(data[3]&3)
		out = append(out, psnRun{psn: psn, n: 1, class: c, dmaLen: n})
	}
	return out
}

// replay runs a sequence through the state machine, as Flows does.
func replay(log seqLog, pmtu uint32) Loss {
	out := Loss{}
	s := seqState{out: &out, pmtu: pmtu}
	for _, r := range log {
		s.run(r)
	}
	s.end()
	return out
}

// FuzzSeqRuns: the runs Add builds are a compression only: replaying them
// gives what replaying every element on its own gives, whatever the
// sequence (gaps, rewinds, READs, responses, PSNs wrapping), and cutting
// the sequence anywhere into two logs merged in order changes nothing.
func FuzzSeqRuns(f *testing.F) {
	f.Add([]byte{1, 0x80, 0, 0, 1, 0x80, 0, 0, 5, 0x80, 0, 0, 0xFC, 0, 0, 0, 1, 0x80, 0, 0, 1, 0x80, 0, 0})
	f.Add([]byte{1, 2, 0x40, 1, 3, 2, 0x40, 1, 1, 0x80, 0, 0, 0xF0, 2, 0x40, 2, 1, 0x80, 0, 0})
	f.Add([]byte{1, 3, 0, 0, 1, 0x80, 0, 0, 3, 3, 0, 0, 1, 4, 0, 0, 0xFE, 4, 0, 0, 1, 0x80, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4<<10 { // 1024 elements: the test replays each 20 times
			data = data[:4<<10]
		}
		els := elementsOf(data)
		for _, pmtu := range []uint32{0, 1024} {
			var single, runs seqLog
			for _, e := range els {
				single = append(single, psnRun{psn: e.psn, n: 1, stride: map[bool]uint32{true: 0, false: 1}[e.class == seqRead], dmaLen: e.dmaLen, class: e.class})
				runs.add(e.psn, e.class, e.dmaLen)
			}
			want := replay(single, pmtu)
			if got := replay(runs, pmtu); !reflect.DeepEqual(got, want) {
				t.Fatalf("pmtu %d: runs %+v\n give %+v\nelements give %+v", pmtu, runs, got, want)
			}
			if want.Sequenced != uint64(len(els)) {
				t.Fatalf("%d elements, %d sequenced", len(els), want.Sequenced)
			}
			for cut := 0; cut <= len(els); cut += 1 + len(els)/7 {
				var a, b lossAcc
				for i, e := range els {
					l := &a.req
					if i >= cut {
						l = &b.req
					}
					l.add(e.psn, e.class, e.dmaLen)
				}
				a.merge(&b)
				if got := replay(a.req, pmtu); !reflect.DeepEqual(got, want) {
					t.Fatalf("pmtu %d, cut at %d: %+v, want %+v", pmtu, cut, got, want)
				}
			}
		}
	})
}

// FuzzSpanSet: insert, remove, overlap and size agree with a plain set.
func FuzzSpanSet(f *testing.F) {
	f.Add([]byte{0, 5, 3, 1, 7, 2, 2, 6, 1, 0, 0, 9})
	f.Fuzz(func(t *testing.T, data []byte) {
		var s spanSet
		model := map[int64]bool{}
		for ; len(data) >= 3; data = data[3:] {
			lo := int64(data[1] % 64)
			hi := lo + int64(data[2]%8)
			switch data[0] % 3 {
			case 0:
				s.insert(lo, hi)
				for v := lo; v <= hi; v++ {
					model[v] = true
				}
			case 1:
				s.remove(lo, hi)
				for v := lo; v <= hi; v++ {
					delete(model, v)
				}
			default:
				var n int64
				for v := lo; v <= hi; v++ {
					if model[v] {
						n++
					}
				}
				if got := s.overlap(lo, hi); got != n {
					t.Fatalf("overlap(%d, %d) = %d, want %d (set %v)", lo, hi, got, n, s)
				}
			}
			if s.size() != int64(len(model)) {
				t.Fatalf("size %d, want %d (set %v)", s.size(), len(model), s)
			}
			for i := range s {
				if s[i].lo > s[i].hi || i > 0 && s[i-1].hi+1 >= s[i].lo {
					t.Fatalf("not sorted, disjoint and apart: %v", s)
				}
			}
		}
	})
}
