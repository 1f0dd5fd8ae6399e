package cluster

import (
	"sort"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	syncedDesc = prometheus.NewDesc("admitc_cluster_synced",
		"1 while every cache (namespaces, and the parameter objects each paramRef reads) has listed its objects since its last break (the API server restarting, a watch failing); 0 before, and while one has not listed again.",
		nil, nil)
	kindSyncedDesc = prometheus.NewDesc("admitc_cluster_cache_synced",
		"1 while every cache of a kind (v1/Namespace, and each parameter kind) has listed its objects since its last break; 0 before, after a break until it lists again, and for a parameter kind that is not served.",
		[]string{"kind"}, nil)
	cachedDesc = prometheus.NewDesc("admitc_cluster_cached_objects",
		"Objects held in the caches of a kind: every namespace, and for a parameter kind only the objects its paramRefs name or select.",
		[]string{"kind"}, nil)
	watchesDesc = prometheus.NewDesc("admitc_cluster_watches",
		"Lists and watches of a kind: one for namespaces, one per distinct paramRef (namespace, and name or selector) of a parameter kind.",
		[]string{"kind"}, nil)
	reachableDesc = prometheus.NewDesc("admitc_cluster_api_reachable",
		"1 while the API server answers; 0 while it does not and decisions are made from the last synced state.", nil, nil)
	lastEventDesc = prometheus.NewDesc("admitc_cluster_last_event_age_seconds",
		"Seconds since a cache last saw objects listed, added, changed or deleted (since start-up when none has).", nil, nil)
)

// Collector returns the Prometheus collector of s's metrics, computed when
// scraped: sync state, cached objects and watches per kind, reachability
// and the age of the last event.
func (s *State) Collector() prometheus.Collector { return collector{s} }

type collector struct{ s *State }

// Describe implements prometheus.Collector.
func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{syncedDesc, kindSyncedDesc, cachedDesc, watchesDesc, reachableDesc, lastEventDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c collector) Collect(ch chan<- prometheus.Metric) {
	for _, k := range c.s.kindStates() {
		ch <- prometheus.MustNewConstMetric(kindSyncedDesc, prometheus.GaugeValue, boolValue(k.synced), k.kind)
		ch <- prometheus.MustNewConstMetric(cachedDesc, prometheus.GaugeValue, float64(k.objects), k.kind)
		ch <- prometheus.MustNewConstMetric(watchesDesc, prometheus.GaugeValue, float64(k.watches), k.kind)
	}
	c.s.mu.Lock()
	started := c.s.ctx != nil
	c.s.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(syncedDesc, prometheus.GaugeValue, boolValue(started && c.s.inSync()))
	ch <- prometheus.MustNewConstMetric(reachableDesc, prometheus.GaugeValue, boolValue(c.s.health.reachable.Load()))
	ch <- prometheus.MustNewConstMetric(lastEventDesc, prometheus.GaugeValue, c.s.health.lastEventAge().Seconds())
}

// kindState is the caches of one kind: in sync, objects held, watches.
type kindState struct {
	kind             string
	synced           bool
	objects, watches int
}

// kindStates lists the watched kinds, Namespaces first, then parameter
// kinds by name. A kind not served is not in sync.
func (s *State) kindStates() []kindState {
	s.mu.Lock()
	defer s.mu.Unlock()
	var params []kindState
	for gvk, p := range s.kinds {
		k := kindState{kind: kindName(gvk), synced: p.resolved}
		for _, c := range p.sources {
			if c != nil {
				k.add(c)
			}
		}
		params = append(params, k)
	}
	sort.Slice(params, func(i, j int) bool { return params[i].kind < params[j].kind })
	ns := kindState{kind: "v1/Namespace", synced: s.ctx != nil}
	ns.add(s.namespaces)
	return append([]kindState{ns}, params...)
}

func (k *kindState) add(c *watchedCache) {
	_, synced := c.state()
	k.synced = k.synced && synced
	k.objects += len(c.store.ListKeys())
	k.watches++
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
