package collect

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/roce-probe/roce-probe/qos"
)

// newPauseRequest builds an ETHTOOL_MSG_PAUSE_GET request for ifname to
// the ethtool generic netlink family family (`ethtool -a`).
func newPauseRequest(family uint16, ifname string) *nl.NetlinkRequest {
	req := nl.NewNetlinkRequest(int(family), 0)
	req.AddData(&nl.Genlmsg{Command: unix.ETHTOOL_MSG_PAUSE_GET, Version: unix.ETHTOOL_GENL_VERSION})
	hdr := nl.NewRtAttr(unix.ETHTOOL_A_PAUSE_HEADER|unix.NLA_F_NESTED, nil)
	hdr.AddRtAttr(unix.ETHTOOL_A_HEADER_DEV_NAME, nl.ZeroTerminated(ifname))
	req.AddData(hdr)
	return req
}

// readPause reads the 802.3x pause settings of netdevs in the handle's
// namespace over ethtool netlink (net/ethtool/pause.c; PAUSE_GET needs no
// privilege: net/ethtool/netlink.c gives only the SET commands
// GENL_UNS_ADMIN_PERM, Linux 6.1). Every netdev gets an entry: read, not
// exposed (no ethtool netlink in the kernel, no get_pauseparam in the
// driver) or an error, each with its reason.
func (h *nsHandle) readPause(netdevs []string) []qos.Pause {
	out := make([]qos.Pause, 0, len(netdevs))
	if len(netdevs) == 0 {
		return out
	}
	fail := func(st qos.SettingStatus, why string) []qos.Pause {
		for _, n := range netdevs {
			r := why
			out = append(out, qos.Pause{Netdev: n, Source: qos.PauseSource, Status: st, Reason: &r})
		}
		return out
	}
	// Generic netlink family IDs are the same in every namespace.
	fam, err := netlink.GenlFamilyGet(unix.ETHTOOL_GENL_NAME)
	if err != nil {
		return fail(qos.SettingNotExposed, fmt.Sprintf("the kernel has no ethtool netlink family (%v): it came with Linux 5.6 (CONFIG_ETHTOOL_NETLINK)", err))
	}
	var sockets map[int]*nl.SocketHandle
	if h.name != "" {
		s, err := nl.GetNetlinkSocketAt(h.ns, netns.None(), unix.NETLINK_GENERIC)
		if err != nil {
			return fail(qos.SettingError, fmt.Sprintf("generic netlink socket in network namespace %q: %v", h.name, err))
		}
		defer s.Close()
		sockets = map[int]*nl.SocketHandle{unix.NETLINK_GENERIC: {Socket: s}}
	}
	for _, n := range netdevs {
		p := qos.Pause{Netdev: n, Source: qos.PauseSource}
		req := newPauseRequest(fam.ID, n)
		req.Sockets = sockets
		msgs, err := req.Execute(unix.NETLINK_GENERIC, fam.ID)
		switch {
		case errors.Is(err, syscall.EOPNOTSUPP):
			p.Status, p.Reason = qos.SettingNotExposed, strp(fmt.Sprintf("%s has no 802.3x pause settings (PAUSE_GET: operation not supported: the driver has no get_pauseparam, as for veth, VLAN and bridge devices)", n))
		case err != nil:
			p.Status, p.Reason = qos.SettingError, strp(fmt.Sprintf("ETHTOOL_MSG_PAUSE_GET on %s: %v", n, err))
		default:
			for _, m := range msgs {
				if err = qos.ParsePauseReply(m, &p); err != nil {
					break
				}
			}
			switch {
			case err != nil:
				p.Status, p.Reason = qos.SettingError, strp(fmt.Sprintf("pause reply for %s: %v", n, err))
			case p.RX == nil || p.TX == nil:
				p.Status, p.Reason = qos.SettingError, strp(fmt.Sprintf("pause reply for %s has no rx or tx flag", n))
			default:
				p.Status = qos.SettingRead
			}
		}
		out = append(out, p)
	}
	return out
}
