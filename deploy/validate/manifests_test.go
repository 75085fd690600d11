package validate

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/roce-probe/roce-probe/internal/agent"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// manifests decodes every deploy/kubernetes file strictly (Decode).
func manifests(t *testing.T) *Set {
	t.Helper()
	s, err := LoadDir(filepath.Join("..", "kubernetes"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Every manifest decodes strictly into its Kubernetes or Prometheus
// operator type: one of each kind, nothing unknown.
func TestManifestsDecodeStrictly(t *testing.T) {
	s := manifests(t)
	if s.Namespace == nil || s.ConfigMap == nil || s.Service == nil || s.DaemonSet == nil || s.ServiceMonitor == nil || s.PrometheusRule == nil {
		t.Fatalf("missing kinds: %+v", s)
	}
	for _, o := range []metav1.Object{s.ConfigMap, s.Service, s.DaemonSet, s.ServiceMonitor, s.PrometheusRule} {
		if o.GetNamespace() != s.Namespace.Name {
			t.Errorf("%s is in namespace %q, want %q", o.GetName(), o.GetNamespace(), s.Namespace.Name)
		}
	}
}

// The strict decoder refuses what the API server would drop or reject:
// an unknown field (a typo), a duplicate key, a kind it does not know, a
// wrong apiVersion.
func TestDecodeRefuses(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "kubernetes", "daemonset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct{ in, want string }{
		"unknown field":   {strings.Replace(string(raw), "hostNetwork: true", "hostNetwork: true\n      hostNetwrk: true", 1), `unknown field "hostNetwrk"`},
		"typo in a probe": {strings.Replace(string(raw), "periodSeconds: 20", "periodSecond: 20", 1), `unknown field`},
		"duplicate key":   {strings.Replace(string(raw), "hostNetwork: true", "hostNetwork: true\n      hostNetwork: false", 1), `key "hostNetwork" already set`},
		"unknown kind":    {strings.Replace(string(raw), "kind: DaemonSet", "kind: DeamonSet", 1), `kind "DeamonSet"`},
		"wrong version":   {strings.Replace(string(raw), "apps/v1", "apps/v1beta2", 1), `apiVersion "apps/v1beta2"`},
		"wrong type":      {strings.Replace(string(raw), "hostNetwork: true", "hostNetwork: yes-please", 1), `hostNetwork`},
	} {
		if c.in == string(raw) {
			t.Fatalf("%s: the manifest changed: nothing replaced", name)
		}
		var s Set
		if err := s.Decode("daemonset.yaml", []byte(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", name, err, c.want)
		}
	}
}

// The DaemonSet the issue asks for: the host's network namespace, only
// CAP_NET_RAW added (every other capability dropped, not privileged, no
// privilege escalation), /sys mounted read-only from the host and nothing
// else from it, requests and limits, liveness on /healthz, no Kubernetes
// API token (no RBAC: nothing reads the API).
func TestDaemonSetSecurity(t *testing.T) {
	s := manifests(t)
	ds := s.DaemonSet
	pod := ds.Spec.Template.Spec
	if !pod.HostNetwork {
		t.Error("hostNetwork is not true")
	}
	if pod.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
		t.Errorf("dnsPolicy %q: a hostNetwork pod needs ClusterFirstWithHostNet to resolve the headless Service", pod.DNSPolicy)
	}
	if pod.HostPID || pod.HostIPC {
		t.Error("hostPID or hostIPC")
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the pod mounts a ServiceAccount token it does not need")
	}
	if len(pod.Containers) != 1 || len(pod.InitContainers) != 0 || len(pod.EphemeralContainers) != 0 {
		t.Fatalf("%d containers, %d init containers: want the agent alone", len(pod.Containers), len(pod.InitContainers))
	}
	c := pod.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.Capabilities == nil {
		t.Fatal("no securityContext.capabilities")
	}
	if got := caps(sc.Capabilities.Add); !reflect.DeepEqual(got, []string{"NET_RAW"}) {
		t.Errorf("capabilities added %v, want NET_RAW only", got)
	}
	if got := caps(sc.Capabilities.Drop); !reflect.DeepEqual(got, []string{"ALL"}) {
		t.Errorf("capabilities dropped %v, want ALL", got)
	}
	if sc.Privileged == nil || *sc.Privileged {
		t.Error("privileged is not false")
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("allowPrivilegeEscalation is not false")
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Error("readOnlyRootFilesystem is not true")
	}
	if psc := pod.SecurityContext; psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Error("no RuntimeDefault seccomp profile")
	}
	// Volumes: the ConfigMap, and /sys from the host, read-only.
	hostPaths := map[string]string{}
	for _, v := range pod.Volumes {
		if v.HostPath != nil {
			hostPaths[v.Name] = v.HostPath.Path
		}
	}
	if !reflect.DeepEqual(hostPaths, map[string]string{"sys": "/sys"}) {
		t.Errorf("hostPath volumes %v: want /sys only", hostPaths)
	}
	sysMounted := false
	for _, m := range c.VolumeMounts {
		if !m.ReadOnly {
			t.Errorf("volume %s mounted at %s is writable", m.Name, m.MountPath)
		}
		if hostPaths[m.Name] == "/sys" && m.MountPath == "/sys" {
			sysMounted = true
			if m.RecursiveReadOnly == nil || *m.RecursiveReadOnly == corev1.RecursiveReadOnlyDisabled {
				t.Error("/sys: recursiveReadOnly not asked for (configfs below it would be writable)")
			}
		}
	}
	if !sysMounted {
		t.Error("/sys is not mounted from the host at /sys")
	}
	// Resources.
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, okReq := c.Resources.Requests[r]
		lim, okLim := c.Resources.Limits[r]
		if !okReq || !okLim {
			t.Errorf("%s: request or limit missing", r)
			continue
		}
		if lim.Cmp(req) < 0 || req.IsZero() {
			t.Errorf("%s: request %s, limit %s", r, req.String(), lim.String())
		}
	}
	// The budget: 40 MiB RSS; the limit leaves room, but bounds.
	if lim := c.Resources.Limits[corev1.ResourceMemory]; lim.Cmp(resource.MustParse("40Mi")) < 0 || lim.Cmp(resource.MustParse("256Mi")) > 0 {
		t.Errorf("memory limit %s: want 40Mi..256Mi", lim.String())
	}
	// Liveness on /healthz at the metrics port.
	lp := c.LivenessProbe
	if lp == nil || lp.HTTPGet == nil || lp.HTTPGet.Path != "/healthz" {
		t.Fatalf("liveness probe %+v: want GET /healthz", lp)
	}
	port := containerPort(c, lp.HTTPGet.Port)
	if port != 9469 {
		t.Errorf("liveness probe port %s is container port %d, want the agent's 9469", lp.HTTPGet.Port.String(), port)
	}
	// The selector selects the template.
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil || !sel.Matches(labels.Set(ds.Spec.Template.Labels)) {
		t.Errorf("the DaemonSet's selector does not select its pods: %v", err)
	}
}

func caps(cs []corev1.Capability) []string {
	var out []string
	for _, c := range cs {
		out = append(out, strings.TrimPrefix(string(c), "CAP_"))
	}
	sort.Strings(out)
	return out
}

func containerPort(c corev1.Container, p intstr.IntOrString) int32 {
	if p.Type == intstr.Int {
		return p.IntVal
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort
		}
	}
	return 0
}

// The pieces fit: the headless Service selects the agents and names their
// metrics port; the agents' peers are its DNS name; the ConfigMap holds
// the file the agent is told to read; the ServiceMonitor scrapes that port
// and names hosts by node.
func TestManifestsFit(t *testing.T) {
	s := manifests(t)
	pod := s.DaemonSet.Spec.Template
	c := pod.Spec.Containers[0]
	svc := s.Service
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("Service clusterIP %q: want None (headless: its DNS name lists every agent)", svc.Spec.ClusterIP)
	}
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) || len(svc.Spec.Selector) == 0 {
		t.Error("the Service does not select the agents")
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "metrics" || containerPort(c, svc.Spec.Ports[0].TargetPort) != 9469 {
		t.Errorf("Service ports %+v: want metrics -> the agent's 9469", svc.Spec.Ports)
	}
	// The config file: args name it, a read-only mount of the ConfigMap
	// provides it.
	var cfgPath string
	for i, a := range c.Args {
		if a == "--config" && i+1 < len(c.Args) {
			cfgPath = c.Args[i+1]
		}
	}
	if len(c.Args) == 0 || c.Args[0] != "agent" || cfgPath == "" {
		t.Fatalf("args %q: want agent --config FILE", c.Args)
	}
	var cmVolume string
	for _, v := range pod.Spec.Volumes {
		if v.ConfigMap != nil && v.ConfigMap.Name == s.ConfigMap.Name {
			cmVolume = v.Name
		}
	}
	found := false
	for _, m := range c.VolumeMounts {
		if m.Name == cmVolume && filepath.Dir(cfgPath) == m.MountPath {
			_, found = s.ConfigMap.Data[filepath.Base(cfgPath)]
		}
	}
	if !found {
		t.Errorf("--config %s is not a key of ConfigMap %s mounted there", cfgPath, s.ConfigMap.Name)
	}
	// The file the agents read, as they read it (TestAgentConfigs checks
	// every agent configuration deploy/ ships).
	cfg, err := agent.ReadConfig([]byte(s.ConfigMap.Data[filepath.Base(cfgPath)]), cfgPath)
	if err != nil {
		t.Fatalf("the ConfigMap's agent configuration: %v", err)
	}
	if want := svc.Name + "." + svc.Namespace + ".svc.cluster.local"; cfg.Peers.DNS != want {
		t.Errorf("peers.dns %q: want the headless Service's name %q", cfg.Peers.DNS, want)
	}
	if cfg.Listen != ":9469" {
		t.Errorf("listen %q: want :9469, the port the probes and the Service use", cfg.Listen)
	}
	// The ServiceMonitor.
	sm := s.ServiceMonitor
	smSel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
	if err != nil || !smSel.Matches(labels.Set(svc.Labels)) {
		t.Errorf("the ServiceMonitor does not select the Service: %v", err)
	}
	if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "metrics" || sm.Spec.Endpoints[0].Path != "/metrics" {
		t.Fatalf("endpoints %+v", sm.Spec.Endpoints)
	}
	node := false
	for _, r := range sm.Spec.Endpoints[0].RelabelConfigs {
		if r.TargetLabel == "node" && len(r.SourceLabels) == 1 && r.SourceLabels[0] == "__meta_kubernetes_pod_node_name" {
			node = true
		}
	}
	if !node {
		t.Error("the ServiceMonitor does not set the node label (roce-probe fabric --host-label node)")
	}
	if !contains(sm.Spec.NamespaceSelector.MatchNames, svc.Namespace) {
		t.Errorf("namespaceSelector %v lacks %s", sm.Spec.NamespaceSelector.MatchNames, svc.Namespace)
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// One source of truth: the PrometheusRule's groups are rules.yml's.
func TestPrometheusRuleEqualsRulesFile(t *testing.T) {
	s := manifests(t)
	raw, err := os.ReadFile(filepath.Join("..", "prometheus", "rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	groups, err := DecodeRules(raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) == 0 || len(groups[0].Rules) < 9 {
		t.Fatalf("rules.yml: %d groups", len(groups))
	}
	if !reflect.DeepEqual(groups, s.PrometheusRule.Spec.Groups) {
		for i := range groups {
			if i < len(s.PrometheusRule.Spec.Groups) {
				for j := range groups[i].Rules {
					if j < len(s.PrometheusRule.Spec.Groups[i].Rules) && !reflect.DeepEqual(groups[i].Rules[j], s.PrometheusRule.Spec.Groups[i].Rules[j]) {
						t.Errorf("rule %s differs:\n rules.yml      %+v\n PrometheusRule %+v", groups[i].Rules[j].Alert, groups[i].Rules[j], s.PrometheusRule.Spec.Groups[i].Rules[j])
					}
				}
			}
		}
		t.Fatal("deploy/kubernetes/prometheusrule.yaml's groups differ from deploy/prometheus/rules.yml")
	}
	// And the alerts the issue and docs/fabric.md name, each with a
	// runbook in docs/fabric.md.
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "fabric.md"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range groups[0].Rules {
		names = append(names, r.Alert)
		anchor := "#" + strings.ToLower(r.Alert)
		if !strings.HasSuffix(r.Annotations["runbook_url"], "docs/fabric.md"+anchor) {
			t.Errorf("%s: runbook_url %q", r.Alert, r.Annotations["runbook_url"])
		}
		if !strings.Contains(string(doc), "### "+r.Alert+"\n") {
			t.Errorf("%s: docs/fabric.md has no section \"### %s\"", r.Alert, r.Alert)
		}
	}
	for _, want := range []string{"RoCEProbeDown", "RoCEProbeRemarked", "RoCEProbeStripped", "RoCEProbeCEMarked", "RoCEProbePeerLoss",
		"RoCEProbeGIDIndexInconsistent", "RoCEProbeFlowLossy", "RoCEProbePauseStorm", "RoCEProbeDiscardsOnRoCEPriority"} {
		if !contains(names, want) {
			t.Errorf("no alert %s", want)
		}
	}
}

// A PrometheusRule whose expression is changed is caught.
func TestRulesDifferenceCaught(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "prometheus", "rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := DecodeRules(raw)
	if err != nil {
		t.Fatal(err)
	}
	b, err := DecodeRules([]byte(strings.Replace(string(raw), "> 0.01", "> 0.02", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(a, b) {
		t.Error("a changed threshold compares equal")
	}
	if _, err := DecodeRules([]byte(strings.Replace(string(raw), "    rules:", "    rulez:", 1))); err == nil {
		t.Error("an unknown key in rules.yml decoded")
	}
}
