package collect

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ifreqData is struct ifreq with ifr_data: the interface name, then a
// pointer to the ethtool command buffer (what ETHTOOL_* ioctls take).
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [24 - unsafe.Sizeof(uintptr(0))]byte
}

// ethtoolIoctl runs one SIOCETHTOOL command on netdev with buf as the
// command structure (its first u32 is the command). GDRVINFO,
// GSSET_INFO, GSTRINGS and GSTATS need no privilege (net/ethtool/ioctl.c
// __dev_ethtool: "Allow some commands to be done by anyone").
func ethtoolIoctl(fd int, netdev string, buf []byte) error {
	var ifr ifreqData
	if len(netdev) >= len(ifr.name) {
		return fmt.Errorf("netdev name %q is too long", netdev)
	}
	copy(ifr.name[:], netdev)
	ifr.data = unsafe.Pointer(&buf[0])
	for {
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
		runtime.KeepAlive(buf)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return e
		}
		return nil
	}
}

// ethtoolSocket opens the socket the ioctls go through, in the calling
// thread's network namespace.
func ethtoolSocket() (int, error) {
	return unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
}

// errNoStats is returned for a netdev without an ETH_SS_STATS set (lo,
// bridges): not an error for the collector, which leaves it out.
var errNoStats = errors.New("no ethtool statistics")

// readEthtool reads netdev's driver and its `ethtool -S` set: the count
// (ETHTOOL_GSSET_INFO), the names (ETHTOOL_GSTRINGS) and the values
// (ETHTOOL_GSTATS). The kernel writes as many entries as the driver
// counts at the time of each request, whatever the buffer holds (mlx5's
// count follows its PFC settings), so the buffers have room for twice the
// count and a set that changed between the requests is read again.
func readEthtool(fd int, netdev string) (driver string, stats map[string]uint64, err error) {
	if info, err := unix.IoctlGetEthtoolDrvinfo(fd, netdev); err == nil {
		driver = unix.ByteSliceToString(info.Driver[:])
	} else if errors.Is(err, unix.ENODEV) {
		return "", nil, fmt.Errorf("%s: %w", netdev, err)
	}
	for try := 0; try < 3; try++ {
		si := make([]byte, sizeofSsetInfoHead+4)
		binary.NativeEndian.PutUint32(si, unix.ETHTOOL_GSSET_INFO)
		binary.NativeEndian.PutUint64(si[8:], 1<<ethSSStats)
		if err := ethtoolIoctl(fd, netdev, si); err != nil {
			if errors.Is(err, unix.EOPNOTSUPP) {
				return driver, nil, errNoStats
			}
			return driver, nil, fmt.Errorf("%s: ETHTOOL_GSSET_INFO: %w", netdev, err)
		}
		n, ok, err := parseSsetInfo(si)
		if err != nil {
			return driver, nil, fmt.Errorf("%s: %w", netdev, err)
		}
		if !ok || n == 0 {
			return driver, nil, errNoStats
		}
		room := 2*int(n) + 16
		gs := make([]byte, sizeofGStringsHead+room*ethGStringLen)
		binary.NativeEndian.PutUint32(gs, unix.ETHTOOL_GSTRINGS)
		binary.NativeEndian.PutUint32(gs[4:], ethSSStats)
		binary.NativeEndian.PutUint32(gs[8:], n)
		if err := ethtoolIoctl(fd, netdev, gs); err != nil {
			return driver, nil, fmt.Errorf("%s: ETHTOOL_GSTRINGS: %w", netdev, err)
		}
		names, err := parseGStrings(gs)
		if err != nil {
			return driver, nil, fmt.Errorf("%s: %w", netdev, err)
		}
		st := make([]byte, sizeofStatsHead+8*room)
		binary.NativeEndian.PutUint32(st, unix.ETHTOOL_GSTATS)
		binary.NativeEndian.PutUint32(st[4:], n)
		if err := ethtoolIoctl(fd, netdev, st); err != nil {
			return driver, nil, fmt.Errorf("%s: ETHTOOL_GSTATS: %w", netdev, err)
		}
		values, err := parseGStats(st)
		if err != nil {
			return driver, nil, fmt.Errorf("%s: %w", netdev, err)
		}
		if len(names) != len(values) {
			continue
		}
		m, err := statsMap(names, values)
		return driver, m, err
	}
	return driver, nil, fmt.Errorf("%s: the ethtool set changed on each of 3 reads", netdev)
}
