package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/roce-probe/roce-probe/collect"
	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/vlan"
)

// hostFlags are the flags every command that reads a host shares: where
// the facts come from (the live host, or a snapshot file with --from), the
// network namespace, and the RDMA device and port. Commands register the
// ones they take with addHostFlags.
type hostFlags struct {
	from  string
	netns string
	dev   string
	port  int
	cmd   *cobra.Command // whose standard input --from - reads
}

// hostFlagSet says which of the shared flags a command takes.
type hostFlagSet struct {
	dev, port bool
	noNetns   bool // the command reads no netdevs: no --netns
	devUsage  string
	portDef   int // default --port (0: every port)
}

func (h *hostFlags) add(c *cobra.Command, set hostFlagSet) {
	h.cmd = c
	fl := c.Flags()
	fl.StringVar(&h.from, "from", "", "analyse this host snapshot (written by 'roce-probe collect', .gz too; - for standard input) instead of the live host: nothing is read from the live host")
	if !set.noNetns {
		fl.StringVar(&h.netns, "netns", "", "look netdevs, routes and neighbours up in this network namespace (a name from 'ip netns list'; live, needs root; with --from, a namespace the snapshot holds)")
	}
	if set.dev {
		usage := set.devUsage
		if usage == "" {
			usage = "only this RDMA device (e.g. mlx5_0, rxe0)"
		}
		fl.StringVar(&h.dev, "dev", "", usage)
	}
	if set.port {
		what := "only this port (1..255)"
		if set.portDef != 0 {
			what = "port of --dev (1..255)"
		}
		intVar(fl, &h.port, "port", set.portDef, 1, 255, what)
	}
}

// liveSysfs is where live reads find sysfs ("" is /sys). Only tests set
// it: to a fixture tree (collect/testdata/*/sys), so that send
// --dev can be tried against a GID table on a machine without an RDMA
// device, with the live netdevs of a test namespace.
var liveSysfs string

// version is the roce-probe build's version ("devel" for a source build).
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// snapshot returns the host's facts: the --from file, or the live host's
// sections (Linux only). Every error is bad input or an unreadable source
// and names the flag or the source.
func (h *hostFlags) snapshot(sections collect.Section) (*host.Snapshot, error) {
	if h.from != "" {
		var s *host.Snapshot
		var err error
		if h.from == "-" {
			// The command's standard input (run's stdin), not the
			// process's: the same as decode -.
			s, err = host.Decode(h.cmd.InOrStdin())
		} else {
			s, err = host.Load(h.from)
		}
		var pe *fs.PathError
		switch {
		case errors.As(err, &pe):
			// Unreadable: say what the file should be.
			return nil, usagef("--from %q: %v: want a host snapshot written by 'roce-probe collect --out FILE'", h.from, pe.Err)
		case err != nil:
			// Not a snapshot, unknown version, bad value: the decoder's
			// error names what is wrong and what is wanted.
			return nil, usagef("--from %q: %v", h.from, err)
		}
		h.noteRDMAErrors(s)
		return s, nil
	}
	opt := collect.Options{Sections: sections, Tool: version(), SysfsRoot: liveSysfs}
	if h.netns != "" {
		opt.Netns = []string{h.netns}
	}
	s, err := collect.Collect(opt)
	if err != nil {
		return nil, liveError(h.netns, err)
	}
	h.noteRDMAErrors(s)
	return s, nil
}

// noteRDMAErrors tells, on stderr, which RDMA devices and ports could not
// be read (the snapshot's "rdma ..." errors): every command that works on
// GID tables shows the others and says what it is missing.
func (h *hostFlags) noteRDMAErrors(s *host.Snapshot) {
	if h.cmd == nil {
		return
	}
	for _, e := range s.Errors {
		if strings.HasPrefix(e.Source, "rdma ") {
			fmt.Fprintf(h.cmd.ErrOrStderr(), "roce-probe: %s could not be read (left out): %s\n", strings.TrimPrefix(e.Source, "rdma "), e.Error)
		}
	}
}

// liveError turns a failed live read into a usage error that says what to
// do: another system, a missing namespace, a missing privilege.
func liveError(netns string, err error) error {
	switch {
	case errors.Is(err, collect.ErrNotLinux):
		return usageError{err}
	case errors.Is(err, host.ErrNoNetns) || errors.Is(err, collect.ErrPermission):
		return usagef("--netns %q: %v", netns, err)
	}
	return usageError{err}
}

// view opens the snapshot (live or --from) in --netns (the snapshot's view
// when not given) with every GID table mapped. It needs the rdma and
// namespaces sections (and whatever else sections asks for).
func (h *hostFlags) view(sections collect.Section) (*host.View, error) {
	s, err := h.snapshot(sections | collect.SectionRDMA | collect.SectionNet)
	if err != nil {
		return nil, err
	}
	v, err := h.viewOf(s)
	if err != nil {
		return nil, err
	}
	if sections&collect.SectionDCB != 0 && s.DCB == nil {
		// Without the section every netdev's DCB would look "not read",
		// and the answer would differ from the live one.
		return nil, h.snapshotError(&host.MissingError{Section: "dcb"})
	}
	return v, nil
}

// viewOf is view on a snapshot already read.
func (h *hostFlags) viewOf(s *host.Snapshot) (*host.View, error) {
	v, err := s.View(h.netns)
	if err != nil {
		return nil, h.snapshotError(err)
	}
	return v, nil
}

// snapshotError names the flag an analysis error comes from: a section
// missing from --from's file, a namespace --netns names that it lacks.
func (h *hostFlags) snapshotError(err error) error {
	var me *host.MissingError
	switch {
	case errors.As(err, &me) && h.from != "":
		return usagef("--from %q: %v", h.from, err)
	case errors.Is(err, host.ErrNoNetns):
		return usagef("--netns %q: %v", h.netns, err)
	}
	return usageError{err}
}

// requireDev names --dev when a command that needs it was not given it.
func (h *hostFlags) requireDev(example string) error {
	if h.dev == "" {
		return usagef("--dev is required: name the RDMA device (e.g. %s)", example)
	}
	return nil
}

// checkDev checks --dev names a device of the view, and --port (when
// given, or a command's default) a port of it; --port alone must name a
// port some device has, or the command would silently show nothing.
func (h *hostFlags) checkDev(v *host.View) error {
	if h.dev != "" && !hasDevice(v, h.dev) {
		devs := strings.Join(v.Devices(), ", ")
		switch {
		case len(v.Ports) == 0:
			return usagef("--dev %q: no such RDMA device: the host has none, and no Ethernet netdev to predict a Soft-RoCE table for", h.dev)
		case v.Predicted:
			return usagef("--dev %q: no such RDMA device: the host has none; the predicted Soft-RoCE devices are %s", h.dev, devs)
		}
		return usagef("--dev %q: no such RDMA device: want one of %s", h.dev, devs)
	}
	if h.port == 0 {
		return nil
	}
	var have []string
	for _, p := range v.Ports {
		if h.dev != "" && p.Device != h.dev {
			continue
		}
		if p.Port == h.port {
			return nil
		}
		have = append(have, fmt.Sprintf("%s port %d", p.Device, p.Port))
	}
	on := "any RDMA device"
	if h.dev != "" {
		on = h.dev
	}
	if len(have) == 0 {
		return usagef("--port %d: no such port on %s: the host has no RDMA device and no Ethernet netdev to predict a Soft-RoCE table for", h.port, on)
	}
	return usagef("--port %d: no such port on %s: want one of %s", h.port, on, strings.Join(have, ", "))
}

func hasDevice(v *host.View, dev string) bool {
	for _, p := range v.Ports {
		if p.Device == dev {
			return true
		}
	}
	return false
}

// ports returns the view's ports --dev and --port select.
func (h *hostFlags) ports(v *host.View) []gid.Port {
	var out []gid.Port
	for _, p := range v.Ports {
		if (h.dev == "" || p.Device == h.dev) && (h.port == 0 || p.Port == h.port) {
			out = append(out, p)
		}
	}
	return out
}

// noSuchNetdev is the error of a netdev flag (--netdev) naming a netdev
// ns does not have: live, where to look; from a snapshot, what it has.
func (h *hostFlags) noSuchNetdev(flag, name string, ns *vlan.Namespace) error {
	if h.from == "" {
		see := "ip link"
		if ns.Netns != "" {
			see = "ip -n " + ns.Netns + " link"
		}
		return usagef("%s %q: no such network device in %s (see '%s')", flag, name, ns.What(), see)
	}
	where := "the collector's network namespace"
	if ns.Netns != "" {
		where = "network namespace " + ns.Netns
	}
	var names []string
	for _, l := range ns.Links {
		names = append(names, l.Name)
	}
	return usagef("%s %q: no such network device in %s of the snapshot: want one of %s", flag, name, where, strings.Join(names, ", "))
}

// noRDMA says that the host read has no RDMA device: this host, or with
// --from the snapshot's host (never the machine roce-probe runs on).
func (h *hostFlags) noRDMA() string {
	if h.from != "" {
		return fmt.Sprintf("the host of snapshot %q has no RDMA device (its rdma.devices is empty)", h.from)
	}
	return "this host has no RDMA device (/sys/class/infiniband is missing or empty)"
}

// notePredicted tells, on stderr, that the host has no RDMA device and the
// tables used are the predicted Soft-RoCE ones: every command that works
// on GID tables says which data it used.
func (h *hostFlags) notePredicted(w io.Writer, v *host.View) {
	if !v.Predicted {
		return
	}
	fmt.Fprintf(w, "roce-probe: %s.\n", h.noRDMA())
	if len(v.Ports) == 0 {
		fmt.Fprintln(w, "roce-probe: and no Ethernet netdev to predict a Soft-RoCE table for.")
		return
	}
	fmt.Fprintln(w, "roce-probe: using the tables Soft-RoCE would get (rdma link add rxe_DEV type rxe netdev DEV; RoCE v2 only — a ConnectX NIC adds a RoCE v1 twin of every entry).")
}

// pathErr drops the operation and path from a *fs.PathError, for messages
// that name the path themselves.
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// parseDst accepts an IP address or a GID of a peer: not unspecified, not
// with a zone, not a loopback address (RoCE never sends to the host
// itself through the loopback device).
func parseDst(s string) (gid.GID, error) {
	if s == "" {
		return gid.GID{}, usagef("--dst is required: give the peer's IP address or GID")
	}
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() != "" {
		return gid.GID{}, usagef("--dst %q has a zone: want the address without %%%s (the source GID's netdev decides the link)", s, a.Zone())
	}
	g, err := gid.Parse(s)
	if err != nil {
		return gid.GID{}, usagef("--dst %q is not an IP address or GID: want e.g. 10.0.0.2, fd00::2 or fe80:0000:0000:0000:0202:c9ff:fe00:0001", s)
	}
	a := g.Addr().Unmap()
	if g.IsZero() || a.IsUnspecified() {
		return gid.GID{}, usagef("--dst %q is the unspecified address: want the peer's IP address or GID", s)
	}
	if a.IsLoopback() {
		return gid.GID{}, usagef("--dst %q is a loopback address: want the peer's address (RoCE frames to the host itself never reach the wire)", s)
	}
	return g, nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func vlanCol(e gid.Entry) string {
	if e.VLAN != nil {
		return fmt.Sprint(*e.VLAN)
	}
	if e.NetnsBoundary != "" {
		return "unknown" // below another namespace's device
	}
	if e.VLANChain != nil {
		return "untagged"
	}
	return "-"
}
