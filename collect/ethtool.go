package collect

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// The SIOCETHTOOL structures roce-probe reads (include/uapi/linux/ethtool.h),
// laid out in host byte order. The requests are in ethtool_linux.go; the
// replies are decoded here so that they can be tested and fuzzed on any
// system.
const (
	ethGStringLen      = 32 // ETH_GSTRING_LEN
	ethSSStats         = 1  // ETH_SS_STATS
	sizeofSsetInfoHead = 16 // struct ethtool_sset_info without data[]: cmd, reserved, sset_mask
	sizeofGStringsHead = 12 // struct ethtool_gstrings without data[]: cmd, string_set, len
	sizeofStatsHead    = 8  // struct ethtool_stats without data[]: cmd, n_stats
	// maxEthtoolStats bounds a set: the kernel writes as many entries as
	// the driver counts, whatever the buffer, so the buffers are sized
	// from the count with room to spare, and a count past this is refused.
	maxEthtoolStats = 1 << 16
)

// parseSsetInfo decodes an ETHTOOL_GSSET_INFO reply asked for one string
// set: the set's count, or ok false when the driver has no such set
// (sset_mask bit clear).
func parseSsetInfo(b []byte) (count uint32, ok bool, err error) {
	if len(b) < sizeofSsetInfoHead {
		return 0, false, fmt.Errorf("ethtool_sset_info is %d bytes: want at least %d", len(b), sizeofSsetInfoHead)
	}
	mask := binary.NativeEndian.Uint64(b[8:])
	if mask&(1<<ethSSStats) == 0 {
		return 0, false, nil
	}
	if len(b) < sizeofSsetInfoHead+4 {
		return 0, false, fmt.Errorf("ethtool_sset_info is %d bytes: want %d with the count", len(b), sizeofSsetInfoHead+4)
	}
	count = binary.NativeEndian.Uint32(b[sizeofSsetInfoHead:])
	if count > maxEthtoolStats {
		return 0, false, fmt.Errorf("ethtool stats count %d: want at most %d", count, maxEthtoolStats)
	}
	return count, true, nil
}

// parseGStrings decodes an ETHTOOL_GSTRINGS reply: the kernel's len, then
// len names of ETH_GSTRING_LEN bytes each, NUL-padded.
func parseGStrings(b []byte) ([]string, error) {
	if len(b) < sizeofGStringsHead {
		return nil, fmt.Errorf("ethtool_gstrings is %d bytes: want at least %d", len(b), sizeofGStringsHead)
	}
	n := int(binary.NativeEndian.Uint32(b[8:]))
	data := b[sizeofGStringsHead:]
	if n > maxEthtoolStats || n*ethGStringLen > len(data) {
		return nil, fmt.Errorf("ethtool_gstrings: %d names do not fit in %d bytes", n, len(data))
	}
	out := make([]string, n)
	for i := range out {
		s := data[i*ethGStringLen : (i+1)*ethGStringLen]
		if j := bytes.IndexByte(s, 0); j >= 0 {
			s = s[:j]
		}
		out[i] = string(s)
	}
	return out, nil
}

// parseGStats decodes an ETHTOOL_GSTATS reply: the kernel's n_stats, then
// n_stats u64 values.
func parseGStats(b []byte) ([]uint64, error) {
	if len(b) < sizeofStatsHead {
		return nil, fmt.Errorf("ethtool_stats is %d bytes: want at least %d", len(b), sizeofStatsHead)
	}
	n := int(binary.NativeEndian.Uint32(b[4:]))
	data := b[sizeofStatsHead:]
	if n > maxEthtoolStats || n*8 > len(data) {
		return nil, fmt.Errorf("ethtool_stats: %d values do not fit in %d bytes", n, len(data))
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = binary.NativeEndian.Uint64(data[8*i:])
	}
	return out, nil
}

// statsMap pairs names and values; a name given twice keeps its first
// value, an empty name is skipped. The counts must match (the set did
// not change between the two requests).
func statsMap(names []string, values []uint64) (map[string]uint64, error) {
	if len(names) != len(values) {
		return nil, fmt.Errorf("ethtool: %d names but %d values (the driver's set changed between the requests)", len(names), len(values))
	}
	m := make(map[string]uint64, len(names))
	for i, n := range names {
		if n == "" {
			continue
		}
		if _, dup := m[n]; !dup {
			m[n] = values[i]
		}
	}
	return m, nil
}

// perQueue reports whether an ethtool statistic counts one queue or
// channel: mlx5's rx%d_*, tx%d_*, ch%d_*, ptp_tx%d_*, qos_tx%d_*
// (en_stats.h MLX5E_DECLARE_*_STAT), virtio_net's rx%d_*/tx%d_*, ice's and
// veth's rx_queue_%u_*/tx_queue_%u_* (ice_get_strings, veth_get_strings),
// bnxt_en's "[%d]: *" ring counters (bnxt_get_strings). The collector
// leaves them out of the snapshot: they say nothing about priorities or
// RoCE and are most of a large NIC's set (mlx5 with 64 channels: about
// 3,000 of them).
func perQueue(name string) bool {
	if len(name) > 3 && name[0] == '[' {
		if i := indexNonDigit(name, 1); i > 1 && i+2 < len(name) && name[i] == ']' && name[i+1] == ':' {
			return true
		}
	}
	n := name
	for _, p := range []string{"ptp_", "qos_"} {
		if len(n) > len(p) && n[:len(p)] == p {
			n = n[len(p):]
			break
		}
	}
	for _, p := range []string{"rx_queue_", "tx_queue_", "rx", "tx", "ch"} {
		if len(n) <= len(p) || n[:len(p)] != p {
			continue
		}
		if i := indexNonDigit(n, len(p)); i > len(p) && i < len(n) && n[i] == '_' {
			return true
		}
	}
	return false
}

// indexNonDigit returns the index of the first byte at or after from that
// is not a decimal digit (len(s) when there is none).
func indexNonDigit(s string, from int) int {
	i := from
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}
