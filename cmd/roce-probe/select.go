package main

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/internal/null"
	"github.com/roce-probe/roce-probe/vlan"
)

func init() { register(newSelectCmd) }

// selectJSON is one element of `select -o json`.
type selectJSON struct {
	Device    string            `json:"device"`
	Port      int               `json:"port"`
	Predicted bool              `json:"predicted"`
	Index     *int              `json:"index"`
	GID       *gid.GID          `json:"gid"`
	Netdev    *string           `json:"netdev"`
	VLAN      *uint16           `json:"vlan"`
	VLANChain []vlan.ChainTag   `json:"vlan_chain"`
	Route     *vlan.RouteResult `json:"route"`
	RDMACM    *int              `json:"rdma_cm_index"`
	NCCL      int               `json:"nccl_index"`
	UCX       int               `json:"ucx_index"`
	Perftest  int               `json:"perftest_index"`
	Reasons   []gid.Reason      `json:"verdicts"`
}

type portSelection struct {
	port gid.Port
	sel  gid.Selection
	err  error
}

func newSelectCmd() *cobra.Command {
	var src hostFlags
	var dst, format, netdev, vlanFlag, subnet string
	var roce, family int
	c := &cobra.Command{
		Use:   "select --dst ADDR",
		Short: "Pick the source GID index for a destination, and say why every other entry is wrong",
		Long: `select picks, on every RoCE port (or the one chosen with --dev/--port), the GID
index to use to reach --dst (an IP address or a GID), and gives the verdict on
every other entry: rejected (with the reason: wrong family, link-local, RoCE v1,
another netdev than the route's, other namespace, ...) or usable but ranked lower.

For an IP destination the route to it decides the netdev, as with rdma_cm: the
entry holding the route's source address on the route's netdev ranks first.
Then RoCE v2 ranks before v1, then lower indices.

-o json prints one JSON document: an array with one object per port, with the keys device,
port, predicted, index, gid, netdev, vlan, vlan_chain, route, rdma_cm_index,
nccl_index, ucx_index, perftest_index and verdicts (every entry's verdict and
reason; docs/json.md); index, gid, netdev, vlan and vlan_chain are null when
nothing on that port can reach the destination. -o env
prints lines to export for NCCL and UCX. The table output also shows what NCCL,
UCX and perftest would pick by themselves. On a host without RDMA devices the
tables Soft-RoCE would get are used (and said so). --from FILE analyses a
snapshot written by 'roce-probe collect'. Exit status 1 when no port can reach
the destination. See docs/gid-selection.md.`,
		Example: `  roce-probe select --dst 10.0.100.2
  roce-probe select --dst fd00:100::2 --roce v2 --vlan 100
  eval "$(roce-probe select --dst 10.0.100.2 -o env)"
  roce-probe select --from node1.json.gz --dst 10.0.100.2 -o json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := parseDst(dst)
			if err != nil {
				return err
			}
			prefs, err := parsePrefs(roce, family, netdev, vlanFlag, subnet)
			if err != nil {
				return err
			}
			if dstFam := map[bool]int{true: 4, false: 6}[d.Addr().Is4In6() || d.Addr().Is4()]; prefs.Family != 0 && prefs.Family != dstFam {
				// Select would pick a source of the other family, which
				// cannot reach the destination: the flags contradict.
				return usagef("--family ipv%d does not match --dst %q (IPv%d): a source GID reaches only destinations of its own family; omit --family or give an IPv%d destination",
					family, dst, dstFam, prefs.Family)
			}
			v, err := src.view(0)
			if err != nil {
				return err
			}
			if err := src.checkDev(v); err != nil {
				return err
			}
			if netdev != "" {
				if _, ok := v.NS.ByName(netdev); !ok {
					return src.noSuchNetdev("--netdev", netdev, v.NS)
				}
			}
			src.notePredicted(cmd.ErrOrStderr(), v)
			var res []portSelection
			found := false
			for _, p := range src.ports(v) {
				if p.LinkLayer != "Ethernet" {
					continue
				}
				pp := prefs
				pp.Exclude = v.Stale(p)
				s, err := gid.Select(p.Entries, d, pp, v.NS)
				if err != nil && !errors.Is(err, gid.ErrNoEntry) {
					return usageError{err}
				}
				found = found || s.Found
				res = append(res, portSelection{p, s, err})
			}
			if len(res) == 0 {
				if len(v.Ports) == 0 {
					return usagef("no RDMA port and no Ethernet netdev to predict one for: nothing to select from")
				}
				return usagef("no RoCE (Ethernet) port%s", devSuffix(src.dev))
			}
			out := cmd.OutOrStdout()
			switch format {
			case "json":
				doc := []selectJSON{}
				for _, r := range res {
					p := r.port
					j := selectJSON{Device: p.Device, Port: p.Port, Predicted: v.Predicted, Reasons: r.sel.Reasons, Route: r.sel.Route,
						NCCL: gid.NCCL(p.Entries, gid.NCCLOptions{}), UCX: gid.UCX(p.Entries), Perftest: gid.Perftest(p.Entries, false)}
					if j.Reasons == nil {
						j.Reasons = []gid.Reason{}
					}
					if r.sel.Found {
						e := r.sel.Entry
						j.Index, j.GID, j.Netdev, j.VLAN, j.VLANChain = &e.Index, &e.GID, null.String(e.Netdev), e.VLAN, e.VLANChain
					}
					if r.sel.Route != nil {
						if e, err := gid.RDMACM(p.Entries, p.Types, *r.sel.Route); err == nil {
							j.RDMACM = &e.Index
						}
					}
					doc = append(doc, j)
				}
				if err := writeJSONIndent(out, doc); err != nil {
					return err
				}
			case "env":
				if v.Predicted {
					// The indexes of a table the kernel has not built, for a
					// device that does not exist: nothing to export, and
					// nothing on standard output for eval to take.
					return findingError{fmt.Sprintf("-o env: the host has no RDMA device: %s is the Soft-RoCE device 'rdma link add' would create (a prediction); nothing to export", res[0].port.Device)}
				}
				writeSelectEnv(out, res, d)
			default:
				writeSelectTable(out, res, d)
			}
			if !found {
				return findingError{fmt.Sprintf("no GID entry can reach %s", d.Addr())}
			}
			return nil
		},
	}
	src.add(c, hostFlagSet{dev: true, port: true})
	c.Flags().StringVar(&dst, "dst", "", "destination: the peer's IP address or GID (required)")
	enumVar(c.Flags(), &roce, "roce", 0, "RoCE version: v1 or v2 (default: either, v2 preferred)",
		choice("v1", 1), choice("v2", 2), choice("1", 1), choice("2", 2))
	enumVar(c.Flags(), &family, "family", 0, "address family: ipv4 or ipv6 (default: the destination's)",
		choice("ipv4", 4), choice("ipv6", 6), choice("4", 4), choice("6", 6), choice("inet", 4), choice("inet6", 6))
	c.Flags().StringVar(&netdev, "netdev", "", "only entries on this netdev")
	c.Flags().StringVar(&vlanFlag, "vlan", "", "only entries whose frames carry this VLAN ID in their outermost tag (0..4095), or \"none\" for untagged")
	c.Flags().StringVar(&subnet, "subnet", "", "only entries whose address is in this prefix (e.g. 10.0.100.0/24)")
	outputVar(c.Flags(), &format, "table", "json", "env")
	return c
}

func parsePrefs(roce, family int, netdev, vlanFlag, subnet string) (gid.Preferences, error) {
	p := gid.Preferences{Version: roce, Family: family}
	p.Netdev = netdev
	if vlanFlag != "" {
		v := gid.NoVLAN
		if vlanFlag != "none" && vlanFlag != "untagged" {
			n, err := parseInt("--vlan", vlanFlag, 0, 4095, false, `or "none" for untagged`)
			if err != nil {
				return p, err
			}
			v = uint16(n)
		}
		p.VLAN = &v
	}
	if subnet != "" {
		pr, err := netip.ParsePrefix(subnet)
		if err != nil {
			return p, usagef("--subnet %q is not a prefix: want e.g. 10.0.100.0/24 or fd00:100::/64", subnet)
		}
		p.Subnet = pr.Masked()
	}
	return p, nil
}

func writeSelectTable(w io.Writer, res []portSelection, dst gid.GID) {
	for i, r := range res {
		if i > 0 {
			fmt.Fprintln(w)
		}
		p, s := r.port, r.sel
		if s.Found {
			e := s.Entry
			fmt.Fprintf(w, "%s port %d: use GID index %d (%s %s on %s, %s) to reach %s\n",
				p.Device, p.Port, e.Index, e.Type, e.GID, orDash(e.Netdev), vlanPhrase(e), dst.Addr())
		} else {
			fmt.Fprintf(w, "%s port %d: no entry can reach %s\n", p.Device, p.Port, dst.Addr())
		}
		switch {
		case s.Route != nil:
			rt := fmt.Sprintf("route: %s via %s", dst.Addr(), orDash(s.Route.Dev))
			if s.Route.Route != nil && s.Route.Route.Gateway.IsValid() {
				rt += " gateway " + s.Route.Route.Gateway.String()
			}
			if s.Route.Src.IsValid() {
				rt += " src " + s.Route.Src.String()
			}
			fmt.Fprintln(w, rt)
			if e, err := gid.RDMACM(p.Entries, p.Types, *s.Route); err == nil {
				fmt.Fprintf(w, "rdma_cm would use index %d\n", e.Index)
			} else {
				fmt.Fprintf(w, "rdma_cm: %v\n", err)
			}
		case s.RouteErr != nil:
			fmt.Fprintf(w, "route: %v\n", s.RouteErr)
		}
		fmt.Fprintf(w, "without a GID index, NCCL would pick %d, UCX %d, perftest %d\n",
			gid.NCCL(p.Entries, gid.NCCLOptions{}), gid.UCX(p.Entries), gid.Perftest(p.Entries, false))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "INDEX\tVERDICT\tREASON")
		for _, rs := range s.Reasons {
			fmt.Fprintf(tw, "%d\t%s\t%s\n", rs.Index, rs.Verdict, rs.Reason)
		}
		tw.Flush()
	}
}

func writeSelectEnv(w io.Writer, res []portSelection, dst gid.GID) {
	var chosen []portSelection
	for _, r := range res {
		if r.sel.Found {
			chosen = append(chosen, r)
		} else {
			fmt.Fprintf(w, "# %s port %d: no entry can reach %s\n", r.port.Device, r.port.Port, dst.Addr())
		}
	}
	if len(chosen) == 0 {
		return
	}
	first := chosen[0]
	same := true
	hcas := ""
	for i, r := range chosen {
		e := r.sel.Entry
		fmt.Fprintf(w, "# %s port %d: GID index %d = %s %s on %s (%s) for %s\n",
			r.port.Device, r.port.Port, e.Index, e.Type, e.GID, orDash(e.Netdev), vlanPhrase(e), dst.Addr())
		if e.Index != first.sel.Entry.Index {
			same = false
		}
		if i > 0 {
			hcas += ","
		}
		hcas += fmt.Sprintf("%s:%d", r.port.Device, r.port.Port)
	}
	if !same {
		fmt.Fprintln(w, "# the ports need different indices, but NCCL_IB_GID_INDEX and UCX_IB_GID_INDEX are global:")
		fmt.Fprintln(w, "# restrict each process to one port with NCCL_IB_HCA / UCX_NET_DEVICES and set its index")
	}
	idx := first.sel.Entry.Index
	fmt.Fprintf(w, "export NCCL_IB_GID_INDEX=%d\n", idx)
	fmt.Fprintf(w, "export UCX_IB_GID_INDEX=%d\n", idx)
	if len(chosen) == 1 || !same {
		hcas = fmt.Sprintf("%s:%d", first.port.Device, first.port.Port)
	}
	fmt.Fprintf(w, "export NCCL_IB_HCA==%s\n", hcas)
	fmt.Fprintf(w, "export UCX_NET_DEVICES=%s\n", hcas)
}

// vlanPhrase is "VLAN 100", "untagged" or "VLAN unknown".
func vlanPhrase(e gid.Entry) string {
	switch c := vlanCol(e); c {
	case "untagged":
		return c
	case "-":
		return "VLAN unknown"
	default:
		return "VLAN " + c
	}
}

func devSuffix(dev string) string {
	if dev == "" {
		return " on any RDMA device"
	}
	return " on " + dev
}
