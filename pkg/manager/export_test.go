package manager

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
