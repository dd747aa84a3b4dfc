package scaffold

import (
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"go/types"
	"maps"
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

// healthChecks maps controller-runtime's manager's health check methods to
// opkit's, which take the same checker.
var healthChecks = map[string]string{"AddHealthzCheck": "AddHealthCheck", "AddReadyzCheck": "AddReadyCheck"}

// keep keeps a statement of main that opkit's manager can run as it is,
// in setup, in main's order: the operator's own set-up, such as lws's
// SetupIndexes(mgr.GetFieldIndexer()) or onepassword-operator's client of
// the 1Password API and the goroutine that polls it. It keeps one that
// calls the manager only through managerMethods, rewritten, or not at all,
// returns nothing, comes before the manager starts, and names only what the
// port's main has (the file's declarations, main's flags, imports, mgr, err,
// ctx, and what statements kept before it declare). It says whether it
// kept st.
func (m *kbMain) keep(st ast.Stmt, rep *portReport) bool {
	if m.started || returns(st) || m.configures(st) || m.setsFlags(st) {
		return false
	}
	f := m.f
	defined := map[string]bool{}
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
		}
		return true
	})
	imps := map[string]string{}
	edits, serves, hosted, why := managerUses(f, st, "mgr", m.pkgPath, m.twins, m.vars, imps)
	if why != "" {
		return false
	}
	// Every name st refers to must exist in the port's main.
	for _, name := range m.freeNames(st) {
		if !defined[name] && !m.known(name) {
			return false
		}
	}
	src, err := applyEdits(f, f.Fset.Position(st.Pos()).Offset, f.Fset.Position(st.End()).Offset, edits)
	if err != nil {
		return false
	}
	f.uses(st, m.imps)
	maps.Copy(m.imps, imps)
	varTypes(f, st, m.pkgPath, m.twins, m.vars)
	m.webhooks = m.webhooks || serves
	m.setups = append(m.setups, src)
	for _, name := range declares(st) {
		m.keptNames[name] = true
	}
	m.keptErr = setsErr(st)
	how := "kept in setup, as it is"
	if len(edits) > 0 {
		how = "kept in setup, on opkit's manager" + givesHosted(hosted)
	}
	rep.mapped(f.Rel, f.line(st), headline(f.src(st)), how)
	return true
}

// portImports are the import names the port's main gives packages of its
// own: a kept statement that means another package by one of them would
// mean the port's.
var portImports = map[string]string{"manager": opkitManager, "crport": opkitCrport, "ctrl": "sigs.k8s.io/controller-runtime", "os": "os", "fmt": "fmt"}

// configures says whether st handles controller-runtime's manager options
// (jobset builds its ctrl.Options from a config file, then sets fields of
// them): kept, it would build options nothing reads, and the port's
// manager would silently run without them. It also says whether st names
// a package by a name the port's main gives another (jobset's manager is
// controller-runtime's pkg/manager; the port's, opkit's).
func (m *kbMain) configures(st ast.Stmt) bool {
	f := m.f
	options := func(n ast.Node) bool {
		found := false
		ast.Inspect(n, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return !found
			}
			if id, isID := sel.X.(*ast.Ident); isID && sel.Sel.Name == "Options" {
				switch f.Imports[id.Name] {
				case "sigs.k8s.io/controller-runtime", "sigs.k8s.io/controller-runtime/pkg/manager":
					found = true
				}
			}
			return !found
		})
		return found
	}
	funcs := map[string]*ast.FuncDecl{}
	for _, d := range f.AST.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil {
			funcs[fn.Name.Name] = fn
		}
	}
	found := options(st)
	ast.Inspect(st, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.SelectorExpr:
			if id, isID := x.X.(*ast.Ident); isID && f.Imports[id.Name] != "" {
				if own, taken := portImports[id.Name]; taken && own != f.Imports[id.Name] {
					found = true
				}
			}
		case *ast.CallExpr:
			// A function of main's file that returns the options.
			if id, isID := x.Fun.(*ast.Ident); isID && funcs[id.Name] != nil && funcs[id.Name].Type.Results != nil && options(funcs[id.Name].Type.Results) {
				found = true
			}
		}
		return !found
	})
	return found
}

// setsFlags says whether st assigns to a variable of main's flags prefix
// (metricsAddr = cfg.Metrics.BindAddress): the port's manager options are
// set from those before setup runs, so kept there the assignment would
// change nothing.
func (m *kbMain) setsFlags(st ast.Stmt) bool {
	found := false
	root := func(e ast.Expr) {
		for {
			switch x := e.(type) {
			case *ast.SelectorExpr:
				e = x.X
				continue
			case *ast.IndexExpr:
				e = x.X
				continue
			case *ast.StarExpr:
				e = x.X
				continue
			case *ast.ParenExpr:
				e = x.X
				continue
			case *ast.Ident:
				// A flag's variable, or, when main built them at run time,
				// the manager's options and rest config, which the
				// manager was already made with.
				found = found || m.prefixNames[x.Name] || (m.optionsVar != "" && (x.Name == m.optionsVar || x.Name == m.restConfig))
			}
			return
		}
	}
	ast.Inspect(st, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.AssignStmt:
			if x.Tok != token.DEFINE {
				for _, l := range x.Lhs {
					root(l)
				}
			}
		case *ast.IncDecStmt:
			root(x.X)
		case *ast.UnaryExpr:
			if x.Op == token.AND {
				root(x.X)
			}
		}
		return !found
	})
	return found
}

// returns says whether st returns from main: in setup, a closure that
// returns an error, it would not build.
func returns(st ast.Stmt) bool {
	found := false
	ast.Inspect(st, func(n ast.Node) bool {
		switch n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.ReturnStmt:
			found = true
		}
		return !found
	})
	return found
}

// setsErr says whether st assigns err, which main then checks.
func setsErr(st ast.Stmt) bool {
	as, ok := st.(*ast.AssignStmt)
	if !ok {
		return false
	}
	for _, l := range as.Lhs {
		if id, isID := l.(*ast.Ident); isID && id.Name == "err" {
			return true
		}
	}
	return false
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
	return m.topLevel[name] || m.prefixNames[name] || m.preNames[name] || m.keptNames[name]
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

// silenceUnused adds `_ = x` after the declaration of each variable of the
// port's main that nothing in it reads, which Go would not build: one
// declared for a statement main regenerates or leaves to the report
// (onepassword-operator declares webhookCertPath for a certificate watcher
// opkit's webhook server replaces).
func silenceUnused(src []byte) ([]byte, error) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "main.go", src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	var mainFn *ast.FuncDecl
	for _, d := range file.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Name.Name == "main" && fn.Recv == nil {
			mainFn = fn
		}
	}
	if mainFn == nil {
		return src, nil
	}
	// Each variable main declares, by name, with its declaring statement,
	// and each name read (not only assigned to) anywhere in main. Names,
	// not objects: a name shadowed and read elsewhere counts as read, and
	// the converter's go build reports what that misses.
	type decl struct {
		name string
		st   ast.Stmt
	}
	var decls []decl
	read := map[string]bool{}
	skip := map[*ast.Ident]bool{} // declared or assigned to, not read
	var stmt ast.Stmt
	var visit func(n ast.Node) bool
	visit = func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.BlockStmt:
			for _, s := range x.List {
				outer := stmt
				stmt = s
				ast.Inspect(s, visit)
				stmt = outer
			}
			return false
		case *ast.AssignStmt:
			for _, l := range x.Lhs {
				if id, ok := l.(*ast.Ident); ok {
					skip[id] = true
					if x.Tok == token.DEFINE {
						decls = append(decls, decl{id.Name, stmt})
					}
				}
			}
		case *ast.ValueSpec:
			for _, id := range x.Names {
				skip[id] = true
				decls = append(decls, decl{id.Name, stmt})
			}
		case *ast.SelectorExpr:
			ast.Inspect(x.X, visit)
			return false
		case *ast.KeyValueExpr:
			if _, ok := x.Key.(*ast.Ident); ok {
				ast.Inspect(x.Value, visit)
				return false
			}
		case *ast.Ident:
			if !skip[x] {
				read[x.Name] = true
			}
		}
		return true
	}
	ast.Inspect(mainFn.Body, visit)
	type insertion struct {
		at   int
		text string
	}
	var ins []insertion
	silenced := map[string]bool{}
	for _, d := range decls {
		if read[d.name] || silenced[d.name] || d.st == nil || d.name == "_" {
			continue
		}
		silenced[d.name] = true
		ins = append(ins, insertion{fset.Position(d.st.End()).Offset, "\n_ = " + d.name + " // main's; nothing the port runs reads it (OPKIT_PORT.md)"})
	}
	if len(ins) == 0 {
		return src, nil
	}
	sort.SliceStable(ins, func(i, j int) bool { return ins[i].at > ins[j].at })
	out := append([]byte(nil), src...)
	for _, in := range ins {
		out = append(out[:in.at:in.at], append([]byte(in.text), out[in.at:]...)...)
	}
	return format.Source(out)
}
