package cluster

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
)

// InPod reports whether the process runs in a Kubernetes pod: the kubelet
// sets KUBERNETES_SERVICE_HOST in every container.
func InPod() bool { return os.Getenv("KUBERNETES_SERVICE_HOST") != "" }

// RESTConfig is the connection to the API server: the kubeconfig file when
// one is named, else the pod's in-cluster configuration (its service
// account token).
func RESTConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		c, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
		}
		return c, nil
	}
	c, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("in-cluster configuration: %w", err)
	}
	return c, nil
}

// NewForConfig returns a State reading the API server rc connects to,
// with discovery resolving parameter kinds and /readyz as the probe;
// cfg's clients, mapper and probe are filled in.
func NewForConfig(rc *rest.Config, cfg Config) (*State, error) {
	rc = rest.CopyConfig(rc)
	rc.UserAgent = "admitc"
	var err error
	if cfg.Client, err = kubernetes.NewForConfig(rc); err != nil {
		return nil, err
	}
	if cfg.Dynamic, err = dynamic.NewForConfig(rc); err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return nil, err
	}
	cfg.Mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	probeConfig := rest.CopyConfig(rc)
	probeConfig.Timeout = 5 * time.Second
	probe, err := discovery.NewDiscoveryClientForConfig(probeConfig)
	if err != nil {
		return nil, err
	}
	cfg.Probe = func(ctx context.Context) error {
		return probe.RESTClient().Get().AbsPath("/readyz").Do(ctx).Error()
	}
	return New(cfg), nil
}
