package cluster

import (
	"sort"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	syncedDesc = prometheus.NewDesc("admitc_cluster_cache_synced",
		"1 when the informer cache of a kind (v1/Namespace, and each parameter kind) has listed its objects, 0 before, and for a parameter kind that is not served.",
		[]string{"kind"}, nil)
	reachableDesc = prometheus.NewDesc("admitc_cluster_api_reachable",
		"1 while the API server answers; 0 while it does not and decisions are made from the last synced state.", nil, nil)
	lastEventDesc = prometheus.NewDesc("admitc_cluster_last_event_age_seconds",
		"Seconds since an informer last saw an object added, changed or deleted (since start-up when none has).", nil, nil)
)

// Collector returns the Prometheus collector of s's metrics, computed when
// scraped: cache sync state per kind, reachability and the age of the last
// event.
func (s *State) Collector() prometheus.Collector { return collector{s} }

type collector struct{ s *State }

// Describe implements prometheus.Collector.
func (c collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- syncedDesc
	ch <- reachableDesc
	ch <- lastEventDesc
}

// Collect implements prometheus.Collector.
func (c collector) Collect(ch chan<- prometheus.Metric) {
	for _, k := range c.s.syncState() {
		ch <- prometheus.MustNewConstMetric(syncedDesc, prometheus.GaugeValue, boolValue(k.synced), k.kind)
	}
	ch <- prometheus.MustNewConstMetric(reachableDesc, prometheus.GaugeValue, boolValue(c.s.health.reachable.Load()))
	ch <- prometheus.MustNewConstMetric(lastEventDesc, prometheus.GaugeValue, c.s.health.lastEventAge().Seconds())
}

// kindSync is whether the cache of one kind has synced.
type kindSync struct {
	kind   string
	synced bool
}

// syncState lists the watched kinds, Namespaces first, then parameter
// kinds by name.
func (s *State) syncState() []kindSync {
	s.mu.Lock()
	defer s.mu.Unlock()
	var params []kindSync
	for gvk, p := range s.kinds {
		params = append(params, kindSync{kind: kindName(gvk), synced: p.informer != nil && p.informer.HasSynced()})
	}
	sort.Slice(params, func(i, j int) bool { return params[i].kind < params[j].kind })
	return append([]kindSync{{kind: "v1/Namespace", synced: s.ctx != nil && s.namespaces.HasSynced()}}, params...)
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
