package collect

import (
	"encoding/binary"
	"strings"
	"testing"
)

// ssetInfo, gstrings and gstats build replies as the kernel lays them out
// (include/uapi/linux/ethtool.h: struct ethtool_sset_info,
// ethtool_gstrings, ethtool_stats).
func ssetInfo(mask uint64, count uint32) []byte {
	b := make([]byte, sizeofSsetInfoHead+4)
	binary.NativeEndian.PutUint32(b, 0x37)
	binary.NativeEndian.PutUint64(b[8:], mask)
	binary.NativeEndian.PutUint32(b[16:], count)
	return b
}

func gstrings(names ...string) []byte {
	b := make([]byte, sizeofGStringsHead+ethGStringLen*len(names))
	binary.NativeEndian.PutUint32(b, 0x1b)
	binary.NativeEndian.PutUint32(b[4:], ethSSStats)
	binary.NativeEndian.PutUint32(b[8:], uint32(len(names)))
	for i, n := range names {
		copy(b[sizeofGStringsHead+i*ethGStringLen:], n)
	}
	return b
}

func gstats(values ...uint64) []byte {
	b := make([]byte, sizeofStatsHead+8*len(values))
	binary.NativeEndian.PutUint32(b, 0x1d)
	binary.NativeEndian.PutUint32(b[4:], uint32(len(values)))
	for i, v := range values {
		binary.NativeEndian.PutUint64(b[sizeofStatsHead+8*i:], v)
	}
	return b
}

func TestEthtoolReplies(t *testing.T) {
	n, ok, err := parseSsetInfo(ssetInfo(1<<ethSSStats|1, 83))
	if err != nil || !ok || n != 83 {
		t.Errorf("sset_info: %d %v %v", n, ok, err)
	}
	if _, ok, err := parseSsetInfo(ssetInfo(1, 5)); ok || err != nil {
		t.Errorf("no ETH_SS_STATS bit: ok %v err %v", ok, err)
	}
	if _, _, err := parseSsetInfo(ssetInfo(1<<ethSSStats, maxEthtoolStats+1)); err == nil {
		t.Error("a count past the bound was accepted")
	}
	// A name of exactly ETH_GSTRING_LEN bytes has no NUL.
	long := strings.Repeat("x", ethGStringLen)
	names, err := parseGStrings(gstrings("rx_prio3_pause", long, ""))
	if err != nil || len(names) != 3 || names[0] != "rx_prio3_pause" || names[1] != long || names[2] != "" {
		t.Errorf("gstrings: %q %v", names, err)
	}
	b := gstrings("a", "b")
	if _, err := parseGStrings(b[:len(b)-1]); err == nil {
		t.Error("a truncated gstrings reply was accepted")
	}
	vals, err := parseGStats(gstats(1, 1<<63, 0))
	if err != nil || len(vals) != 3 || vals[1] != 1<<63 {
		t.Errorf("gstats: %v %v", vals, err)
	}
	s := gstats(1, 2)
	if _, err := parseGStats(s[:len(s)-3]); err == nil {
		t.Error("a truncated gstats reply was accepted")
	}
	m, err := statsMap([]string{"x", "", "x", "y"}, []uint64{1, 2, 3, 4})
	if err != nil || len(m) != 2 || m["x"] != 1 || m["y"] != 4 {
		t.Errorf("statsMap: %v %v", m, err)
	}
	if _, err := statsMap([]string{"x"}, nil); err == nil {
		t.Error("a count mismatch was accepted")
	}
}

func FuzzEthtoolReplies(f *testing.F) {
	f.Add(ssetInfo(2, 3), gstrings("a", "b", "c"), gstats(1, 2, 3))
	f.Add([]byte{}, []byte{1, 2}, []byte{0, 0, 0, 0, 255, 255, 255, 255})
	f.Fuzz(func(t *testing.T, si, gs, st []byte) {
		n, ok, err := parseSsetInfo(si)
		if err == nil && ok && n > maxEthtoolStats {
			t.Fatalf("count %d past the bound", n)
		}
		names, err1 := parseGStrings(gs)
		for _, s := range names {
			if len(s) > ethGStringLen || strings.IndexByte(s, 0) >= 0 {
				t.Fatalf("name %q", s)
			}
		}
		vals, err2 := parseGStats(st)
		if err1 == nil && err2 == nil {
			m, err := statsMap(names, vals)
			if err == nil && len(m) > len(names) {
				t.Fatal("more stats than names")
			}
		}
	})
}

// Per-queue names from the drivers' format strings are left out; the
// per-priority and port counters stay.
func TestPerQueue(t *testing.T) {
	for _, n := range []string{"rx0_packets", "tx12_bytes", "ch3_events", "rx5_xdp_tx_xmit", "tx0_xsk_xmit", "ptp_tx0_packets",
		"qos_tx1_bytes", "rx_queue_0_packets", "tx_queue_15_bytes", "rx_queue_0_xdp_packets", "[0]: rx_ucast_packets", "[12]: tx_bytes", "rx0_drops"} {
		if !perQueue(n) {
			t.Errorf("%q is per queue", n)
		}
	}
	for _, n := range []string{"rx_prio3_pause", "tx_prio0_packets", "rx_packets", "rx_pause_ctrl_phy", "tx_priority_3_xoff.nic", "rx_priority_0_xon.nic",
		"pfc_pri3_rx_duration_us", "rx_bytes_pri3", "rx_64b_frames", "rx_pfc_ena_frames_pri7", "ptp_ch_events", "peer_ifindex", "rx_discards_phy",
		"rx_queue_", "rx0", "rx_dropped.nic", "[x]: y", "ch_events", "tx"} {
		if perQueue(n) {
			t.Errorf("%q is not per queue", n)
		}
	}
}
