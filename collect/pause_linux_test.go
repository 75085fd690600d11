package collect

import (
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/roce-probe/roce-probe/internal/netnstest"
	"github.com/roce-probe/roce-probe/qos"
)

func requireEthtoolNetlink(t *testing.T) {
	t.Helper()
	if _, err := netlink.GenlFamilyGet(unix.ETHTOOL_GENL_NAME); err != nil {
		t.Skipf("this kernel has no ethtool netlink family (%v): readPause reports every netdev as not exposed", err)
	}
}

// The loopback has no get_pauseparam (the kernel answers EOPNOTSUPP): not
// exposed; a netdev that does not exist is an error naming it. Both
// reads go through ethtool netlink in the collector's own namespace.
func TestReadPauseOwnNamespace(t *testing.T) {
	requireEthtoolNetlink(t)
	h, err := openNetns("")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	got := h.readPause([]string{"lo", "nosuchdev0"})
	if len(got) != 2 {
		t.Fatalf("%d entries, want 2: %+v", len(got), got)
	}
	if got[0].Netdev != "lo" || got[0].Status != qos.SettingNotExposed || got[0].Reason == nil || !strings.Contains(*got[0].Reason, "get_pauseparam") {
		t.Errorf("lo: %+v", got[0])
	}
	if got[1].Status != qos.SettingError || got[1].Reason == nil || !strings.Contains(*got[1].Reason, "nosuchdev0") || got[1].RX != nil {
		t.Errorf("missing netdev: %+v", got[1])
	}
	if got[0].Source != qos.PauseSource {
		t.Errorf("source %q", got[0].Source)
	}
}

// In another namespace the request goes through a socket of that
// namespace: its veth is found (not exposed: veth has no pause
// settings), and a netdev of the collector's own namespace is not.
func TestReadPauseOtherNamespace(t *testing.T) {
	netnstest.RequireRoot(t)
	requireEthtoolNetlink(t)
	a, b := netnstest.New(t, "pa"), netnstest.New(t, "pb")
	netnstest.Veth(t, a, "pa0", "02:00:00:00:03:0a", b, "pb0", "02:00:00:00:03:0b")
	h, err := openNetns(a)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	got := h.readPause([]string{"pa0", "pb0"})
	if got[0].Status != qos.SettingNotExposed || !strings.Contains(*got[0].Reason, "pa0 has no 802.3x pause settings") {
		t.Errorf("pa0 in its namespace: %+v", got[0])
	}
	if got[1].Status != qos.SettingError {
		t.Errorf("pb0 is in another namespace, yet: %+v", got[1])
	}
}
