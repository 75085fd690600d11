package validate

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	promconfig "github.com/prometheus/prometheus/config"
	_ "github.com/prometheus/prometheus/discovery/file" // registers file_sd_configs (prometheus.yml)
	"golang.org/x/crypto/bcrypt"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/roce-probe/roce-probe/internal/agent"
)

// webConfigName is the file name of a web configuration (the Prometheus
// exporters' format) in deploy/ and in the Secret.
const webConfigName = "web-config.yml"

// webConfig is what these tests read of a web configuration.
type webConfig struct {
	TLS struct {
		CertFile string `json:"cert_file"`
		KeyFile  string `json:"key_file"`
	} `json:"tls_server_config"`
	Users map[string]string `json:"basic_auth_users"`
}

// checkWebConfig checks a web configuration as the agent does
// (agent.CheckWebConfig), with a generated certificate and key in place of
// the files it names, and returns it.
func checkWebConfig(t *testing.T, name string, raw []byte) webConfig {
	t.Helper()
	var w webConfig
	if err := yaml.Unmarshal(raw, &w); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if w.TLS.CertFile == "" || w.TLS.KeyFile == "" || len(w.Users) == 0 {
		t.Fatalf("%s: want TLS (cert_file, key_file) and basic_auth_users: %+v", name, w)
	}
	dir := t.TempDir()
	writeCert(t, filepath.Join(dir, w.TLS.CertFile), filepath.Join(dir, w.TLS.KeyFile))
	p := filepath.Join(dir, webConfigName)
	if err := os.WriteFile(p, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := agent.CheckWebConfig(p); err != nil {
		t.Errorf("%s: the agent refuses it: %v", name, err)
	}
	return w
}

func writeCert(t *testing.T, certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "roce-probe"},
		DNSNames: []string{"roce-probe.roce-probe.svc"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		p string
		b *pem.Block
	}{{certFile, &pem.Block{Type: "CERTIFICATE", Bytes: der}}, {keyFile, &pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}}} {
		if err := os.MkdirAll(filepath.Dir(f.p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f.p, pem.EncodeToMemory(f.b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// authenticates says whether user and password pass w's basic auth.
func (w webConfig) authenticates(user, password string) bool {
	h, ok := w.Users[user]
	return ok && bcrypt.CompareHashAndPassword([]byte(h), []byte(password)) == nil
}

func secretValue(s *corev1.Secret, key string) (string, bool) {
	if v, ok := s.StringData[key]; ok {
		return v, true
	}
	v, ok := s.Data[key]
	return string(v), ok
}

// The secured Kubernetes set-up fits together: the ConfigMap's
// web_config_file is the Secret's web-config.yml where the DaemonSet
// mounts it, next to the certificate and key it names (from the Secret
// roce-probe-tls, which the operator creates); the agent takes that web
// configuration; the probes and the ServiceMonitor use HTTPS and
// credentials its basic_auth_users accept; /snapshot is limited to the
// RoCE sections; the ServiceMonitor checks the certificate against
// roce-probe-tls's CA for the Service's name.
func TestWebConfigKubernetes(t *testing.T) {
	s := manifests(t)
	cfg, err := agent.ReadConfig([]byte(s.ConfigMap.Data["agent.yaml"]), "agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Snapshot != agent.SnapshotRoCE {
		t.Errorf("snapshot %q: want %q (no routes, neighbours or other links to anyone with the password)", cfg.Snapshot, agent.SnapshotRoCE)
	}
	if cfg.WebConfigFile == "" {
		t.Fatal("the ConfigMap sets no web_config_file: plain HTTP")
	}
	webSecret := s.Secrets["roce-probe-web-config"]
	if webSecret == nil {
		t.Fatalf("no Secret roce-probe-web-config: %v", s.Secrets)
	}
	raw, ok := secretValue(webSecret, webConfigName)
	if !ok {
		t.Fatalf("Secret %s has no %s", webSecret.Name, webConfigName)
	}
	w := checkWebConfig(t, "Secret "+webSecret.Name, []byte(raw))

	// The DaemonSet mounts the web configuration at web_config_file and the
	// certificate and key next to it.
	pod := s.DaemonSet.Spec.Template.Spec
	c := pod.Containers[0]
	files := map[string]string{} // path in the container → "secret/key"
	for _, m := range c.VolumeMounts {
		for _, v := range pod.Volumes {
			if v.Name != m.Name || v.Projected == nil {
				continue
			}
			for _, src := range v.Projected.Sources {
				if src.Secret == nil {
					continue
				}
				for _, it := range src.Secret.Items {
					files[path.Join(m.MountPath, it.Path)] = src.Secret.Name + "/" + it.Key
				}
			}
		}
	}
	dir := path.Dir(cfg.WebConfigFile)
	for p, want := range map[string]string{
		cfg.WebConfigFile:              webSecret.Name + "/" + webConfigName,
		path.Join(dir, w.TLS.CertFile): "roce-probe-tls/tls.crt",
		path.Join(dir, w.TLS.KeyFile):  "roce-probe-tls/tls.key",
	} {
		if files[p] != want {
			t.Errorf("%s in the container is %q, want Secret key %s (mounted: %v)", p, files[p], want, files)
		}
	}

	// Liveness and readiness: HTTPS, with credentials the agent accepts.
	for what, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Scheme != corev1.URISchemeHTTPS {
			t.Errorf("%s probe: want HTTPS GET /healthz: %+v", what, p)
			continue
		}
		ok := false
		for _, h := range p.HTTPGet.HTTPHeaders {
			if enc, isBasic := strings.CutPrefix(h.Value, "Basic "); h.Name == "Authorization" && isBasic {
				b, err := base64.StdEncoding.DecodeString(enc)
				user, pass, _ := strings.Cut(string(b), ":")
				ok = err == nil && w.authenticates(user, pass)
			}
		}
		if !ok {
			t.Errorf("%s probe: no Authorization header the web configuration accepts (it would get 401 and restart the agent)", what)
		}
	}

	// The ServiceMonitor: HTTPS, the CA of roce-probe-tls, the Service's
	// name, and roce-probe-scrape's credentials, which the agent accepts.
	ep := s.ServiceMonitor.Spec.Endpoints[0]
	if ep.Scheme == nil || ep.Scheme.String() != "https" {
		t.Errorf("ServiceMonitor scheme %v: want https", ep.Scheme)
	}
	svcName := s.Service.Name + "." + s.Service.Namespace + ".svc"
	if tc := ep.TLSConfig; tc == nil || tc.CA.Secret == nil || tc.CA.Secret.Name != "roce-probe-tls" || tc.CA.Secret.Key != "ca.crt" ||
		tc.ServerName == nil || *tc.ServerName != svcName {
		t.Errorf("ServiceMonitor tlsConfig %+v: want ca from roce-probe-tls ca.crt and serverName %s", tc, svcName)
	}
	ba := ep.BasicAuth
	if ba == nil {
		t.Fatal("ServiceMonitor: no basicAuth")
	}
	scrape := s.Secrets[ba.Username.Name]
	if scrape == nil || ba.Password.Name != ba.Username.Name {
		t.Fatalf("ServiceMonitor basicAuth %+v: want one Secret of this set for both", ba)
	}
	user, _ := secretValue(scrape, ba.Username.Key)
	pass, _ := secretValue(scrape, ba.Password.Key)
	if !w.authenticates(user, pass) {
		t.Errorf("Secret %s's %q and its password: the web configuration refuses them", scrape.Name, user)
	}

	// A plain Prometheus on Kubernetes scrapes the same way.
	b, err := os.ReadFile(filepath.Join("..", "prometheus", "kubernetes-scrape.yml"))
	if err != nil {
		t.Fatal(err)
	}
	pc, err := promconfig.Load(string(b), nil)
	if err != nil {
		t.Fatal(err)
	}
	sc := pc.ScrapeConfigs[0]
	if sc.Scheme != "https" || sc.HTTPClientConfig.TLSConfig.CAFile == "" || sc.HTTPClientConfig.TLSConfig.ServerName != svcName ||
		sc.HTTPClientConfig.BasicAuth == nil || sc.HTTPClientConfig.BasicAuth.PasswordFile == "" || w.Users[sc.HTTPClientConfig.BasicAuth.Username] == "" {
		t.Errorf("kubernetes-scrape.yml: want https, a CA file, server_name %s and basic_auth of a user of the web configuration: %+v", svcName, sc.HTTPClientConfig)
	}
}

// Bare metal: systemd/web-config.yml is a web configuration the agent
// takes; agent.yaml names it where roce-probe-agent.service's
// LoadCredential puts it, with the certificate and key it names;
// prometheus.yml scrapes over HTTPS as a user it has.
func TestWebConfigSystemd(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "systemd", webConfigName))
	if err != nil {
		t.Fatal(err)
	}
	w := checkWebConfig(t, "systemd/"+webConfigName, raw)
	b, err := os.ReadFile(filepath.Join("..", systemdAgentConfig))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := agent.ReadConfig(b, systemdAgentConfig)
	if err != nil {
		t.Fatal(err)
	}
	creds := map[string]bool{}
	for _, v := range unit(t)["LoadCredential"] {
		id, _, _ := strings.Cut(v, ":")
		creds[path.Join("/run/credentials/roce-probe-agent.service", id)] = true
	}
	dir := path.Dir(cfg.WebConfigFile)
	for _, p := range []string{cfg.WebConfigFile, path.Join(dir, w.TLS.CertFile), path.Join(dir, w.TLS.KeyFile)} {
		if !creds[p] {
			t.Errorf("%s: not a credential of roce-probe-agent.service (LoadCredential: %v)", p, creds)
		}
	}
	if path.Base(cfg.WebConfigFile) != webConfigName {
		t.Errorf("web_config_file %s: want the credential %s", cfg.WebConfigFile, webConfigName)
	}
	if cfg.Snapshot != agent.SnapshotRoCE {
		t.Errorf("snapshot %q: want %q", cfg.Snapshot, agent.SnapshotRoCE)
	}
	pc, err := promconfig.LoadFile(filepath.Join("..", "prometheus", "prometheus.yml"), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range pc.ScrapeConfigs {
		if sc.JobName != "roce-probe" {
			continue
		}
		if sc.Scheme != "https" || sc.HTTPClientConfig.TLSConfig.CAFile == "" || sc.HTTPClientConfig.BasicAuth == nil ||
			w.Users[sc.HTTPClientConfig.BasicAuth.Username] == "" || sc.HTTPClientConfig.BasicAuth.PasswordFile == "" {
			t.Errorf("prometheus.yml job roce-probe: want https, a CA file and basic_auth of a user of %s: %+v", webConfigName, sc.HTTPClientConfig)
		}
	}
}
