package manager

import "net/http"

// ControllerStopping reports whether RemoveController has begun to stop
// the controller named name.
func ControllerStopping(m *Manager, name string) bool {
	m.mu.Lock()
	mc := m.controllers[name]
	m.mu.Unlock()
	if mc == nil {
		return false
	}
	mc.mu.Lock()
	defer mc.mu.Unlock()
	return mc.removed
}

// CacheHTTPClient returns the HTTP client the manager gives its cache when
// Options.Cache.HTTPClient is hc.
func CacheHTTPClient(m *Manager, hc *http.Client) *http.Client { return m.cacheHTTPClient(hc) }
