package scaffold

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"sort"
)

// managerMethods maps each method of controller-runtime's manager that a
// kept statement of main may call to opkit's counterpart; %s is the
// manager.
var managerMethods = map[string]string{
	"GetClient":        "%s.CachedClient()",
	"GetScheme":        "%s.Scheme()",
	"GetAPIReader":     "%s.UncachedClient()",
	"GetConfig":        "%s.Config()",
	"GetFieldIndexer":  "crport.FieldIndexer(%s)",
	"GetWebhookServer": "%s.WebhookServer()",
	"GetLogger":        "%s.Logger()",
	"Elected":          "%s.Elected()",
}

// keep keeps a statement of main that opkit's manager can run as it is,
// such as an operator's SetupIndexes(mgr.GetFieldIndexer()): one that
// calls the manager only through managerMethods, rewritten, declares
// nothing, and names only what the port's main has (the file's
// declarations, main's flags, imports, mgr, err and ctx). It says whether
// it kept st.
func (m *kbMain) keep(st ast.Stmt, rep *portReport) bool {
	f := m.f
	calls := map[*ast.CallExpr]string{}
	defined := map[string]bool{}
	ok := true
	ast.Inspect(st, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.AssignStmt:
			if x.Tok == token.DEFINE {
				for _, l := range x.Lhs {
					if id, isID := l.(*ast.Ident); isID {
						defined[id.Name] = true
					}
				}
			}
		case *ast.ValueSpec:
			for _, id := range x.Names {
				defined[id.Name] = true
			}
		case *ast.Field:
			for _, id := range x.Names {
				defined[id.Name] = true
			}
		case *ast.RangeStmt:
			for _, e := range []ast.Expr{x.Key, x.Value} {
				if id, isID := e.(*ast.Ident); isID && x.Tok == token.DEFINE {
					defined[id.Name] = true
				}
			}
		case *ast.CallExpr:
			sel, isSel := x.Fun.(*ast.SelectorExpr)
			if !isSel {
				return true
			}
			if id, isID := sel.X.(*ast.Ident); isID && id.Name == "mgr" {
				to, mapped := managerMethods[sel.Sel.Name]
				if !mapped || len(x.Args) > 0 {
					ok = false
					return false
				}
				calls[x] = fmt.Sprintf(to, "mgr")
				return false
			}
		case *ast.Ident:
			// The manager other than as the receiver of a mapped call:
			// passed on, it would be opkit's where controller-runtime's
			// is expected.
			if x.Name == "mgr" {
				ok = false
			}
		}
		return ok
	})
	// Only a statement that reaches the manager, and declares nothing a
	// dropped statement could have been the one to use.
	if !ok || len(calls) == 0 || len(declares(st)) > 0 {
		return false
	}
	// Every name st refers to must exist in the port's main.
	for _, name := range m.freeNames(st) {
		if !defined[name] && !m.known(name) {
			return false
		}
	}
	src, err := m.rewriteStmt(st, calls)
	if err != nil {
		return false
	}
	f.uses(st, m.imps)
	for _, to := range calls {
		if to[:7] == "crport." {
			m.imps["crport"] = opkitCrport
		}
	}
	m.setups = append(m.setups, src)
	rep.mapped(f.Rel, f.line(st), headline(f.src(st)), "kept in setup, on opkit's manager")
	return true
}

// freeNames are the identifiers st refers to that are not a selector's
// field or method, a composite literal's key, or a package.
func (m *kbMain) freeNames(st ast.Stmt) []string {
	seen := map[string]bool{}
	var visit func(n ast.Node) bool
	visit = func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.SelectorExpr:
			if id, isID := x.X.(*ast.Ident); isID && m.f.Imports[id.Name] != "" {
				return false
			}
			ast.Inspect(x.X, visit)
			return false
		case *ast.KeyValueExpr:
			if _, isID := x.Key.(*ast.Ident); isID {
				ast.Inspect(x.Value, visit)
				return false
			}
		case *ast.Ident:
			if x.Name != "_" {
				seen[x.Name] = true
			}
		}
		return true
	}
	ast.Inspect(st, visit)
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// known says whether name exists where the port's setup runs.
func (m *kbMain) known(name string) bool {
	switch {
	case name == "mgr", name == "err", name == "ctx":
		return true
	case types.Universe.Lookup(name) != nil:
		return true
	}
	return m.topLevel[name] || m.prefixNames[name]
}

// rewriteStmt is st's source with each call in calls replaced.
func (m *kbMain) rewriteStmt(st ast.Stmt, calls map[*ast.CallExpr]string) (string, error) {
	f := m.f
	base, stop := f.Fset.Position(st.Pos()).Offset, f.Fset.Position(st.End()).Offset
	src := append([]byte(nil), f.Src[base:stop]...)
	order := make([]*ast.CallExpr, 0, len(calls))
	for c := range calls {
		order = append(order, c)
	}
	sort.Slice(order, func(i, j int) bool { return order[i].Pos() > order[j].Pos() })
	for _, c := range order {
		start, end := f.Fset.Position(c.Pos()).Offset-base, f.Fset.Position(c.End()).Offset-base
		if start < 0 || end > len(src) {
			return "", fmt.Errorf("%s: a call outside its statement", f.Rel)
		}
		src = append(src[:start:start], append([]byte(calls[c]), src[end:]...)...)
	}
	return string(src), nil
}

// declares is the names st declares: x := ..., var x ...
func declares(st ast.Stmt) []string {
	var names []string
	switch x := st.(type) {
	case *ast.AssignStmt:
		if x.Tok == token.DEFINE {
			for _, l := range x.Lhs {
				if id, ok := l.(*ast.Ident); ok {
					names = append(names, id.Name)
				}
			}
		}
	case *ast.DeclStmt:
		if g, ok := x.Decl.(*ast.GenDecl); ok {
			for _, spec := range g.Specs {
				if v, ok := spec.(*ast.ValueSpec); ok {
					for _, id := range v.Names {
						names = append(names, id.Name)
					}
				}
			}
		}
	}
	return names
}
