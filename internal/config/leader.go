package config

import (
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Leader election defaults: client-go's usual 15 s / 10 s / 2 s (kube-controller-manager's).
const (
	// DefaultLeaseName is the coordination.k8s.io Lease the gateway replicas compete for.
	DefaultLeaseName = "sloserve-controller"
	// DefaultLeaseDuration is how long followers wait after the last renewal before taking over.
	DefaultLeaseDuration = 15 * time.Second
	// DefaultRenewDeadline is how long the leader retries renewing before it gives up leading.
	DefaultRenewDeadline = 10 * time.Second
	// DefaultRetryPeriod is how often every replica tries to acquire or renew the Lease.
	DefaultRetryPeriod = 2 * time.Second
	// DefaultPeerTimeout bounds one GET of a peer's facts.
	DefaultPeerTimeout = 500 * time.Millisecond
	// EnvPodName is the pod's name from the downward API: the replica's leader-election identity.
	EnvPodName = "POD_NAME"
)

// LeaderElection makes one of several gateway replicas the controller (docs/deployment.md): every
// replica serves traffic and follows the fleet; only the holder of a coordination.k8s.io Lease
// runs the scaling loop. It needs a Kubernetes API (provider.kubernetes.kubeconfig).
type LeaderElection struct {
	// Enabled turns leader election on; off, this process is the only controller (one replica).
	Enabled bool `yaml:"enabled"`
	// LeaseName is the Lease's name (a DNS subdomain).
	LeaseName string `yaml:"lease_name"`
	// Namespace is the Lease's namespace; "" means provider.kubernetes' namespace.
	Namespace string `yaml:"namespace"`
	// Identity names this replica in the Lease; "" means $POD_NAME, else hostname_pid.
	Identity string `yaml:"identity"`
	// LeaseDuration is how long a Lease is held without renewal before another replica takes
	// over (duration): a follower acquires it this long after it watched the last renewal
	// arrive, so a crashed leader is replaced within this long plus the API's latency.
	LeaseDuration time.Duration `yaml:"lease_duration"`
	// RenewDeadline is how long the leader keeps retrying a renewal before it stops leading
	// (duration; < lease_duration).
	RenewDeadline time.Duration `yaml:"renew_deadline"`
	// RetryPeriod is the interval between the leader's renewals and between failed attempts
	// (duration; < renew_deadline).
	RetryPeriod time.Duration `yaml:"retry_period"`
}

// Peers are the other gateway replicas whose facts (per-model arrivals, queue lengths, SLO
// misses; GET /internal/v1/facts) the leader adds to its own, so that its controller sees the
// whole fleet's traffic.
type Peers struct {
	// Static lists the replicas' base URLs (http://host:port), for a fleet outside Kubernetes; a
	// replica finds itself by identity and skips it.
	Static []string `yaml:"static"`
	// Service is the gateway Service whose EndpointSlices (discovery.k8s.io) name the replicas;
	// "" means none. Its namespace is provider.kubernetes' namespace.
	Service string `yaml:"service"`
	// Port is the name of the Service port that serves the gateway's HTTP API.
	Port string `yaml:"port"`
	// Timeout bounds one peer's answer (duration); a peer that does not answer in time is left
	// out of that sample.
	Timeout time.Duration `yaml:"timeout"`
}

// DefaultLeaderElection is off, with client-go's usual timings.
func DefaultLeaderElection() LeaderElection {
	return LeaderElection{LeaseName: DefaultLeaseName, LeaseDuration: DefaultLeaseDuration,
		RenewDeadline: DefaultRenewDeadline, RetryPeriod: DefaultRetryPeriod}
}

// DefaultPeers lists no peer.
func DefaultPeers() Peers { return Peers{Port: "http", Timeout: DefaultPeerTimeout} }

// EffectiveIdentity is Identity, else $POD_NAME, else hostname_pid.
func (l LeaderElection) EffectiveIdentity() string {
	if l.Identity != "" {
		return l.Identity
	}
	if n := os.Getenv(EnvPodName); n != "" {
		return n
	}
	h, _ := os.Hostname()
	return fmt.Sprintf("%s_%d", h, os.Getpid())
}

func (l LeaderElection) validate() error {
	if !l.Enabled {
		return nil
	}
	switch {
	case len(validation.IsDNS1123Subdomain(l.LeaseName)) > 0:
		return fmt.Errorf("controller.leader_election.lease_name: %q is not a DNS subdomain", l.LeaseName)
	case l.Namespace != "" && len(validation.IsDNS1123Label(l.Namespace)) > 0:
		return fmt.Errorf("controller.leader_election.namespace: %q is not a DNS label", l.Namespace)
	case strings.ContainsAny(l.Identity, " \t\r\n"):
		return fmt.Errorf("controller.leader_election.identity: %q must not contain white space", l.Identity)
	case l.RetryPeriod <= 0:
		return fmt.Errorf("controller.leader_election.retry_period: must be > 0, got %v", l.RetryPeriod)
	case l.RenewDeadline <= l.RetryPeriod:
		return fmt.Errorf("controller.leader_election.renew_deadline: must be > retry_period %v, got %v", l.RetryPeriod, l.RenewDeadline)
	case l.LeaseDuration <= l.RenewDeadline:
		return fmt.Errorf("controller.leader_election.lease_duration: must be > renew_deadline %v, got %v", l.RenewDeadline, l.LeaseDuration)
	}
	return nil
}

func (p Peers) validate() error {
	for i, s := range p.Static {
		if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("controller.peers.static[%d]: %q is not an http(s)://host:port URL", i, s)
		}
	}
	switch {
	case p.Service != "" && len(validation.IsDNS1035Label(p.Service)) > 0:
		return fmt.Errorf("controller.peers.service: %q is not a Service name", p.Service)
	case p.Service != "" && p.Port == "":
		return fmt.Errorf("controller.peers.port: must name the Service's HTTP port when service is set")
	case p.Timeout <= 0:
		return fmt.Errorf("controller.peers.timeout: must be > 0, got %v", p.Timeout)
	}
	return nil
}

// validateReplicas checks what several gateway replicas need: the Lease and the EndpointSlices
// live in a Kubernetes API, and a replica that may start as a follower cannot profile a model
// before the leader has launched its instances, so each model's instance_type.rps is configured
// unless the policy keeps a configured fleet.
func (c Config) validateReplicas() error {
	le := c.Controller.LeaderElection
	if (le.Enabled || c.Controller.Peers.Service != "") && c.Provider.Kind != ProviderKubernetes {
		return fmt.Errorf("controller.leader_election / controller.peers.service: need provider.kind kubernetes, got %q", c.Provider.Kind)
	}
	if !le.Enabled || c.Controller.ConfiguredFleet() {
		return nil
	}
	for i, m := range c.Models {
		if m.InstanceType.RPS <= 0 {
			return fmt.Errorf("models[%d].instance_type.rps: must be > 0 with controller.leader_election (a follower cannot profile), got %v", i, m.InstanceType.RPS)
		}
	}
	return nil
}
