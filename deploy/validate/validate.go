package validate

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Set is the manifests of deploy/kubernetes, one object of each kind but
// Secrets (by name).
type Set struct {
	Namespace      *corev1.Namespace
	ConfigMap      *corev1.ConfigMap
	Secrets        map[string]*corev1.Secret
	Service        *corev1.Service
	DaemonSet      *appsv1.DaemonSet
	ServiceMonitor *monitoringv1.ServiceMonitor
	PrometheusRule *monitoringv1.PrometheusRule
}

// LoadDir decodes every *.yaml file of dir into a Set.
func LoadDir(dir string) (*Set, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no *.yaml manifests", dir)
	}
	sort.Strings(files)
	s := &Set{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if err := s.Decode(filepath.Base(f), b); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Decode decodes every document of a YAML file strictly into the type of
// its apiVersion and kind: an unknown field, a duplicate key, a value of
// the wrong type, an unknown kind or a second object of a kind is an error
// naming the file and document.
func (s *Set) Decode(name string, b []byte) error {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for n := 1; ; n++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: document %d: %w", name, n, err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return fmt.Errorf("%s: document %d: %w", name, n, err)
		}
		var target any
		var have bool
		switch tm.APIVersion + " " + tm.Kind {
		case "v1 Namespace":
			have = s.Namespace != nil
			s.Namespace = &corev1.Namespace{}
			target = s.Namespace
		case "v1 ConfigMap":
			have = s.ConfigMap != nil
			s.ConfigMap = &corev1.ConfigMap{}
			target = s.ConfigMap
		case "v1 Secret":
			sec := &corev1.Secret{}
			if err := yaml.UnmarshalStrict(doc, sec); err != nil {
				return fmt.Errorf("%s: document %d (Secret): %w", name, n, err)
			}
			if s.Secrets[sec.Name] != nil {
				return fmt.Errorf("%s: document %d: a second Secret %q", name, n, sec.Name)
			}
			if s.Secrets == nil {
				s.Secrets = map[string]*corev1.Secret{}
			}
			s.Secrets[sec.Name] = sec
			continue
		case "v1 Service":
			have = s.Service != nil
			s.Service = &corev1.Service{}
			target = s.Service
		case "apps/v1 DaemonSet":
			have = s.DaemonSet != nil
			s.DaemonSet = &appsv1.DaemonSet{}
			target = s.DaemonSet
		case "monitoring.coreos.com/v1 ServiceMonitor":
			have = s.ServiceMonitor != nil
			s.ServiceMonitor = &monitoringv1.ServiceMonitor{}
			target = s.ServiceMonitor
		case "monitoring.coreos.com/v1 PrometheusRule":
			have = s.PrometheusRule != nil
			s.PrometheusRule = &monitoringv1.PrometheusRule{}
			target = s.PrometheusRule
		default:
			return fmt.Errorf("%s: document %d: apiVersion %q kind %q: not a kind roce-probe deploys (v1 Namespace, ConfigMap, Secret, Service; apps/v1 DaemonSet; monitoring.coreos.com/v1 ServiceMonitor, PrometheusRule)", name, n, tm.APIVersion, tm.Kind)
		}
		if have {
			return fmt.Errorf("%s: document %d: a second %s", name, n, tm.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, target); err != nil {
			return fmt.Errorf("%s: document %d (%s): %w", name, n, tm.Kind, err)
		}
	}
}

// stripComments drops the lines that are YAML comments.
func stripComments(b []byte) []byte {
	var out []byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if t := bytes.TrimSpace(l); len(t) > 0 && t[0] != '#' {
			out = append(out, l...)
			out = append(out, '\n')
		}
	}
	return out
}

// DecodeRules decodes a Prometheus rules file (groups: [...]) strictly
// into the Prometheus operator's rule groups, the type a PrometheusRule's
// spec.groups has.
func DecodeRules(b []byte) ([]monitoringv1.RuleGroup, error) {
	var f struct {
		Groups []monitoringv1.RuleGroup `json:"groups"`
	}
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		return nil, err
	}
	return f.Groups, nil
}
