package collect

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/roce-probe/roce-probe/vlan"
)

// ProbeNeighbor makes the kernel resolve the next hop of rr the way
// ibv_create_ah does, without RDMA: it sends one UDP datagram from src to
// port 9 (discard) of dst through rr's netdev (IP_UNICAST_IF /
// IPV6_UNICAST_IF, so the same route is used; no privileges needed), then
// watches the neighbour table of the caller's network namespace until the
// next hop's entry is usable or has FAILED, or until timeout (the kernel
// gives an AH 1000 ms). A next hop that does not answer gives an error
// wrapping syscall.ETIMEDOUT with the state seen. rr must come from a
// route lookup in the caller's own namespace. `roce-probe ah
// --resolve-neighbour` and probe.ResolveEndpoint (`roce-probe send`, the
// agent's flows) call it.
func ProbeNeighbor(src, dst netip.Addr, rr vlan.RouteResult, timeout time.Duration) (vlan.Neighbor, error) {
	src, dst = src.Unmap(), dst.Unmap()
	if rr.Local || rr.Ifindex == 0 {
		return vlan.Neighbor{}, fmt.Errorf("nothing to probe: the destination %s is local or the route has no output device", dst)
	}
	if err := sendDiscard(src, dst, rr.Ifindex); err != nil {
		return vlan.Neighbor{}, fmt.Errorf("probing the neighbour %s on %s: %w", rr.NextHop, rr.Dev, err)
	}
	fam := netlink.FAMILY_V4
	if rr.NextHop.Is6() {
		fam = netlink.FAMILY_V6
	}
	deadline := time.Now().Add(timeout)
	var last vlan.Neighbor
	for {
		ns, err := netlink.NeighList(rr.Ifindex, fam)
		if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
			return vlan.Neighbor{}, fmt.Errorf("reading the neighbour table: %w", err)
		}
		for _, n := range ns {
			ip, ok := netip.AddrFromSlice(n.IP)
			if !ok || ip.Unmap() != rr.NextHop {
				continue
			}
			last = vlan.Neighbor{IP: rr.NextHop, Dev: rr.Dev, Ifindex: rr.Ifindex, MAC: vlan.MAC(append([]byte(nil), n.HardwareAddr...)), State: vlan.NUDState(n.State)}
			if last.State.Valid() && len(last.MAC) == 6 {
				return last, nil
			}
		}
		if !time.Now().Before(deadline) {
			return last, fmt.Errorf("the neighbour %s on %s did not answer within %v (state %s): %w", rr.NextHop, rr.Dev, timeout, last.State, syscall.ETIMEDOUT)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// SolicitNeighbor is ProbeNeighbor without the wait: it sends the one
// datagram that makes the kernel resolve rr's next hop and returns at
// once; the next Collect shows the answer. A long-running reader (the
// agent) uses it for many next hops at a time.
func SolicitNeighbor(src, dst netip.Addr, rr vlan.RouteResult) error {
	if rr.Local || rr.Ifindex == 0 {
		return fmt.Errorf("nothing to solicit: the destination %s is local or the route has no output device", dst)
	}
	return sendDiscard(src.Unmap(), dst.Unmap(), rr.Ifindex)
}

// sendDiscard sends one empty UDP datagram from src to dst:9 through the
// interface ifindex.
func sendDiscard(src, dst netip.Addr, ifindex int) error {
	fam := unix.AF_INET
	if dst.Is6() {
		fam = unix.AF_INET6
	}
	fd, err := unix.Socket(fam, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	// IP_UNICAST_IF and IPV6_UNICAST_IF both take the index in network
	// byte order.
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(ifindex))
	beIndex := int(int32(binary.NativeEndian.Uint32(b[:])))
	var to unix.Sockaddr
	if dst.Is4() {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_UNICAST_IF, beIndex); err != nil {
			return fmt.Errorf("IP_UNICAST_IF: %w", err)
		}
		if src.Is4() {
			if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: src.As4()}); err != nil {
				return fmt.Errorf("bind %s: %w", src, err)
			}
		}
		to = &unix.SockaddrInet4{Port: 9, Addr: dst.As4()}
	} else {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_UNICAST_IF, beIndex); err != nil {
			return fmt.Errorf("IPV6_UNICAST_IF: %w", err)
		}
		if src.Is6() {
			sa := &unix.SockaddrInet6{Addr: src.As16()}
			if src.IsLinkLocalUnicast() {
				sa.ZoneId = uint32(ifindex)
			}
			if err := unix.Bind(fd, sa); err != nil {
				return fmt.Errorf("bind %s: %w", src, err)
			}
		}
		sa := &unix.SockaddrInet6{Port: 9, Addr: dst.As16()}
		if dst.IsLinkLocalUnicast() || dst.IsLinkLocalMulticast() {
			sa.ZoneId = uint32(ifindex)
		}
		to = sa
	}
	if err := unix.Sendto(fd, nil, 0, to); err != nil && !errors.Is(err, unix.EAGAIN) {
		// EHOSTUNREACH here already means the kernel gave up on the neighbour.
		return err
	}
	return nil
}
