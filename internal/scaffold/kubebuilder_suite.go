package scaffold

import (
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"path"
	"sort"
	"strconv"
	"strings"
)

const (
	crRoot    = "sigs.k8s.io/controller-runtime"
	crManager = "sigs.k8s.io/controller-runtime/pkg/manager"
)

// suitePort rewrites one test file that runs controller-runtime's manager
// so that it runs opkit's, with the ported controllers and webhooks.
type suitePort struct {
	f       *kbFile
	module  string
	gofiles []*kbFile
	setups  portedSetups
	mgr     string            // opkit's manager package's name in the file
	mgrs    map[string]bool   // the variables that hold the manager
	vars    map[string]string // the types of the file's variables (varTypes), made when first needed
	allowed map[*ast.Ident]bool
	edits   map[ast.Node]string
	adds    map[string]string // imports to add: name -> path
	mapped  []portItem
	// why is the first thing the port cannot map, at line; "" when none.
	why  string
	line int
}

// portSuite returns f rewritten onto opkit's manager, and what it mapped;
// or, when f uses the manager in a way it cannot map, the reason and its
// line. ok is false when f does not make controller-runtime's manager.
func portSuite(f *kbFile, module string, gofiles []*kbFile, setups portedSetups) (src []byte, mapped []portItem, why string, line int, ok bool) {
	p := &suitePort{f: f, module: module, gofiles: gofiles, setups: setups, mgr: "manager",
		mgrs: map[string]bool{}, allowed: map[*ast.Ident]bool{}, edits: map[ast.Node]string{}, adds: map[string]string{}}
	if path, taken := f.Imports["manager"]; taken && path != opkitManager {
		p.mgr = "opkitmanager"
	}
	if !p.findManagers() {
		return nil, nil, "", 0, false
	}
	p.rewriteUses()
	if p.why == "" {
		p.unmappedUses()
	}
	if p.why != "" {
		return nil, nil, p.why, p.line, true
	}
	p.adds[p.mgr] = opkitManager
	out, err := p.render()
	if err != nil {
		return nil, nil, err.Error(), 0, true
	}
	return out, p.mapped, "", 0, true
}

func (p *suitePort) fail(n ast.Node, why string) {
	if p.why == "" {
		p.why, p.line = why, p.f.line(n)
	}
}

func (p *suitePort) note(n ast.Node, what, how string) {
	p.mapped = append(p.mapped, portItem{File: p.f.Rel, Line: p.f.line(n), What: what, How: how})
}

// isCR says whether x names one of controller-runtime's packages paths.
func (p *suitePort) isCR(x ast.Expr, paths ...string) bool {
	id, ok := x.(*ast.Ident)
	if !ok {
		return false
	}
	for _, want := range paths {
		if p.f.Imports[id.Name] == want {
			return true
		}
	}
	return false
}

// findManagers finds the variables holding controller-runtime's manager:
// assigned from ctrl.NewManager, or declared as a ctrl.Manager; each such
// type becomes *manager.Manager, and each NewManager call manager.New.
func (p *suitePort) findManagers() bool {
	found := false
	ast.Inspect(p.f.AST, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.SelectorExpr:
			if x.Sel.Name == "Manager" && p.isCR(x.X, crRoot, crManager) {
				p.edits[x] = "*" + p.mgr + ".Manager"
			}
		case *ast.ValueSpec:
			if sel, ok := x.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Manager" && p.isCR(sel.X, crRoot, crManager) {
				for _, id := range x.Names {
					p.mgrs[id.Name] = true
					p.allowed[id] = true
				}
			}
		case *ast.Field:
			if sel, ok := x.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Manager" && p.isCR(sel.X, crRoot, crManager) {
				for _, id := range x.Names {
					p.mgrs[id.Name] = true
					p.allowed[id] = true
				}
			}
		case *ast.AssignStmt:
			if len(x.Rhs) != 1 {
				return true
			}
			call, ok := x.Rhs[0].(*ast.CallExpr)
			if !ok || !p.newManager(call) {
				return true
			}
			found = true
			id, ok := x.Lhs[0].(*ast.Ident)
			if !ok {
				p.fail(x, "the manager is not assigned to a variable: port the suite by hand")
				return false
			}
			p.mgrs[id.Name] = true
			p.allowed[id] = true
			p.newCall(call)
			return false
		}
		return true
	})
	return found
}

// newManager says whether call is ctrl.NewManager or manager.New of
// controller-runtime.
func (p *suitePort) newManager(call *ast.CallExpr) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	return ok && ((sel.Sel.Name == "NewManager" && p.isCR(sel.X, crRoot)) || (sel.Sel.Name == "New" && p.isCR(sel.X, crManager)))
}

// newCall maps ctrl.NewManager(cfg, ctrl.Options{...}) to manager.New.
func (p *suitePort) newCall(call *ast.CallExpr) {
	f := p.f
	if len(call.Args) != 2 {
		p.fail(call, "NewManager with other arguments than a config and options: port the suite by hand")
		return
	}
	lit, ok := call.Args[1].(*ast.CompositeLit)
	if !ok {
		p.fail(call, "NewManager's options are not written out where it is called: port the suite by hand")
		return
	}
	var fields []string
	metrics, health := false, false
	for _, el := range lit.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			p.fail(el, "an option not keyed: port the suite by hand")
			return
		}
		v := kv.Value
		switch key := f.src(kv.Key); key {
		case "Scheme":
			fields = append(fields, "Scheme: "+f.src(v))
		case "HealthProbeBindAddress":
			health = true
			fields = append(fields, fmt.Sprintf("Health: %s.HealthOptions{BindAddress: %s}", p.mgr, f.src(v)))
		case "LeaderElection":
			fields = append(fields, fmt.Sprintf("LeaderElection: %s.LeaderElectionOptions{Enabled: %s}", p.mgr, f.src(v)))
		case "LeaderElectionID":
			p.fail(kv, "ctrl.Options.LeaderElectionID in a suite: port it to manager.Options.LeaderElection by hand")
			return
		case "Metrics":
			opts, ok := p.serverOptions(v, "Options", map[string]bool{"BindAddress": true})
			if !ok {
				return
			}
			metrics = true
			fields = append(fields, fmt.Sprintf("Metrics: %s.MetricsOptions{%s}", p.mgr, opts))
		case "WebhookServer":
			inner, isCall := v.(*ast.CallExpr)
			if !isCall || method(inner) != "NewServer" || len(inner.Args) != 1 {
				p.fail(v, "a webhook server not made by webhook.NewServer(webhook.Options{...}): port the suite by hand")
				return
			}
			opts, ok := p.serverOptions(inner.Args[0], "Options", map[string]bool{"Host": true, "Port": true, "CertDir": true, "TLSOpts": true})
			if !ok {
				return
			}
			fields = append(fields, fmt.Sprintf("Webhook: %s.WebhookOptions{%s}", p.mgr, opts))
		case "Controller":
			p.note(kv, "ctrl.Options.Controller", "dropped: its controller options (name validation, timeouts) are controller-runtime's; opkit's are per controller")
			continue
		default:
			p.fail(kv, "ctrl.Options."+key+" in a suite: a manager option the converter does not map: port the suite by hand")
			return
		}
		p.note(kv, "ctrl.Options."+f.src(kv.Key), "manager.Options")
	}
	// A suite's servers must not take fixed ports, which another suite
	// running beside it holds: off, unless the suite sets them.
	if !metrics {
		fields = append(fields, fmt.Sprintf("Metrics: %s.MetricsOptions{BindAddress: \"0\"}", p.mgr))
	}
	if !health {
		fields = append(fields, fmt.Sprintf("Health: %s.HealthOptions{BindAddress: \"0\"}", p.mgr))
	}
	p.edits[call] = fmt.Sprintf("%s.New(%s, %s.Options{\n%s,\n})", p.mgr, f.src(call.Args[0]), p.mgr, strings.Join(fields, ",\n"))
	p.note(call, "ctrl.NewManager", "manager.New: the suite runs the ported controllers and webhooks on opkit's manager")
}

// serverOptions maps a metricsserver.Options or webhook.Options literal,
// whose fields in keep opkit's options share by name and type.
func (p *suitePort) serverOptions(e ast.Expr, typ string, keep map[string]bool) (string, bool) {
	lit, ok := e.(*ast.CompositeLit)
	if !ok || !strings.HasSuffix(p.f.src(lit.Type), "."+typ) {
		p.fail(e, "server options not written out as a literal: port the suite by hand")
		return "", false
	}
	var out []string
	for _, el := range lit.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok || !keep[p.f.src(kv.Key)] {
			p.fail(el, p.f.src(lit.Type)+" field "+headline(p.f.src(el))+": not one opkit's server options share: port the suite by hand")
			return "", false
		}
		out = append(out, p.f.src(el))
	}
	return strings.Join(out, ", "), true
}

// twinCall maps F(mgr), pkg.F(mgr) or v.M(mgr), where F or M is a webhook
// setup or a helper with an opkit twin (jobset's webhooks.Setup, lws's
// pw.Setup), to the twin, and says whether it did.
func (p *suitePort) twinCall(call *ast.CallExpr) bool {
	if len(call.Args) != 1 || method(call) == "SetupWithManager" {
		// A reconciler's: rewriteUses maps it, with its type.
		return false
	}
	arg, isArg := call.Args[0].(*ast.Ident)
	if !isArg || !p.mgrs[arg.Name] {
		return false
	}
	if p.vars == nil {
		p.vars = map[string]string{}
		varTypes(p.f, p.f.AST, p.pkgPath(), p.setups, p.vars)
	}
	key, fn := twinOf(p.f, call, p.pkgPath(), p.setups, p.vars)
	twin := p.setups[key]
	if fn == nil || twin == "" {
		return false
	}
	p.edits[fn] = twin
	p.allowed[arg] = true
	p.note(call, fn.Name, twin)
	return true
}

// rewriteUses maps the manager's methods, and the setups of ported
// controllers and webhooks called with it.
func (p *suitePort) rewriteUses() {
	ast.Inspect(p.f.AST, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || p.why != "" {
			return p.why == ""
		}
		if fn := method(call); fn == "Expect" || fn == "Ω" {
			// A suite's check that the manager was made.
			for _, a := range call.Args {
				if id, isID := a.(*ast.Ident); isID && p.mgrs[id.Name] {
					p.allowed[id] = true
				}
			}
			return true
		}
		if p.twinCall(call) {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if fn, isID := call.Fun.(*ast.Ident); isID && len(call.Args) == 1 && strings.HasPrefix(fn.Name, "Setup") && strings.HasSuffix(fn.Name, "WebhookWithManager") {
			// kubebuilder's webhook suite, in the webhook's package.
			if arg, isArg := call.Args[0].(*ast.Ident); isArg && p.mgrs[arg.Name] {
				twin := p.setups[setupKey(p.pkgPath()+"."+fn.Name)]
				if twin == "" {
					p.fail(call, headline(p.f.src(call))+": its webhook has no opkit twin (see its entry): port the suite by hand")
					return false
				}
				p.edits[fn] = twin
				p.allowed[arg] = true
				p.note(call, fn.Name, twin)
				return true
			}
		}
		if !ok {
			for _, a := range call.Args {
				if id, isID := a.(*ast.Ident); isID && p.mgrs[id.Name] {
					p.fail(call, headline(p.f.src(call))+": passes the manager to code written for controller-runtime's: port the suite by hand")
					return false
				}
			}
			return true
		}
		if id, isID := sel.X.(*ast.Ident); isID && p.mgrs[id.Name] {
			p.method(call, sel, id)
			return true
		}
		var arg *ast.Ident
		for _, a := range call.Args {
			if id, isID := a.(*ast.Ident); isID && p.mgrs[id.Name] {
				arg = id
			}
		}
		if arg == nil {
			return true
		}
		name := sel.Sel.Name
		switch {
		case len(call.Args) != 1:
			p.fail(call, headline(p.f.src(call))+": passes the manager to code written for controller-runtime's: port the suite by hand")
			return false
		case name == "SetupWithManager":
			key, ok := p.reconcilerType(sel.X)
			twin := p.setups[key]
			if !ok || twin == "" {
				p.fail(call, headline(p.f.src(call))+": its controller has no SetupWithOpkit (see its entry): port the suite by hand")
				return false
			}
			p.edits[sel.Sel] = twin
			p.allowed[arg] = true
			p.note(call, "SetupWithManager of "+p.f.src(sel.X), twin)
		case strings.HasPrefix(name, "Setup") && strings.HasSuffix(name, "WebhookWithManager"):
			pkg, isPkg := sel.X.(*ast.Ident)
			twin := ""
			if isPkg {
				twin = p.setups[setupKey(p.f.Imports[pkg.Name]+"."+name)]
			}
			if twin == "" {
				p.fail(call, headline(p.f.src(call))+": its webhook has no opkit twin (see its entry): port the suite by hand")
				return false
			}
			p.edits[sel.Sel] = twin
			p.allowed[arg] = true
			p.note(call, name, twin)
		default:
			p.fail(call, headline(p.f.src(call))+": passes the manager to code written for controller-runtime's: port the suite by hand")
			return false
		}
		return true
	})
}

// method maps a call of one of the manager's methods.
func (p *suitePort) method(call *ast.CallExpr, sel *ast.SelectorExpr, id *ast.Ident) {
	name := sel.Sel.Name
	if name == "Start" {
		p.allowed[id] = true
		return
	}
	node, to, crport := managerMethod(p.f, call, sel, id.Name)
	if node == nil {
		p.fail(call, id.Name+"."+name+": a method of controller-runtime's manager opkit's does not have, or not with these arguments: port the suite by hand")
		return
	}
	if crport {
		p.adds["crport"] = opkitCrport
	}
	p.edits[node] = to
	p.allowed[id] = true
	if node == ast.Node(call) {
		p.note(call, headline(p.f.src(call)), to)
	}
}

// unmappedUses fails on any other use of the manager, such as passing it
// to a function that takes controller-runtime's.
func (p *suitePort) unmappedUses() {
	ast.Inspect(p.f.AST, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			ast.Inspect(sel.X, func(m ast.Node) bool {
				if id, ok := m.(*ast.Ident); ok && p.mgrs[id.Name] && !p.allowed[id] {
					p.fail(id, "the manager used as "+headline(p.f.src(sel))+": port the suite by hand")
				}
				return true
			})
			return false
		}
		if id, ok := n.(*ast.Ident); ok && p.mgrs[id.Name] && !p.allowed[id] {
			p.fail(id, "the manager passed on where controller-runtime's is expected: port the suite by hand")
		}
		return p.why == ""
	})
}

// reconcilerType is the setup key of the type of x, the receiver of a
// SetupWithManager: &pkg.T{...}, or a variable made so or by pkg.NewT(...),
// or declared *pkg.T.
func (p *suitePort) reconcilerType(x ast.Expr) (setupKey, bool) {
	if par, ok := x.(*ast.ParenExpr); ok {
		x = par.X
	}
	if typ, _, ok := objectType(p.f, x); ok {
		return p.typeKey(typ)
	}
	id, ok := x.(*ast.Ident)
	if !ok {
		return "", false
	}
	var key setupKey
	found := false
	ast.Inspect(p.f.AST, func(n ast.Node) bool {
		switch d := n.(type) {
		case *ast.ValueSpec:
			for i, name := range d.Names {
				if name.Name != id.Name {
					continue
				}
				if d.Type != nil {
					key, found = p.typeKey(p.f.src(d.Type))
				} else if i < len(d.Values) {
					key, found = p.madeBy(d.Values[i])
				}
			}
		case *ast.AssignStmt:
			for i, l := range d.Lhs {
				if lid, ok := l.(*ast.Ident); ok && lid.Name == id.Name && i < len(d.Rhs) && len(d.Lhs) == len(d.Rhs) {
					if k, ok := p.madeBy(d.Rhs[i]); ok {
						key, found = k, true
					}
				}
			}
		}
		return !found
	})
	return key, found
}

// madeBy is the setup key of what e makes: &pkg.T{...}, or pkg.NewT(...)
// whose first result is *T.
func (p *suitePort) madeBy(e ast.Expr) (setupKey, bool) {
	if typ, _, ok := objectType(p.f, e); ok {
		return p.typeKey(typ)
	}
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return "", false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return "", false
	}
	pkg, ok := sel.X.(*ast.Ident)
	if !ok {
		return "", false
	}
	pkgPath := p.f.Imports[pkg.Name]
	for _, g := range p.gofiles {
		if p.module+"/"+path.Dir(g.Rel) != pkgPath {
			continue
		}
		for _, d := range g.AST.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Name.Name != sel.Sel.Name || fn.Type.Results == nil || len(fn.Type.Results.List) == 0 {
				continue
			}
			star, ok := fn.Type.Results.List[0].Type.(*ast.StarExpr)
			if !ok {
				return "", false
			}
			if t, ok := star.X.(*ast.Ident); ok {
				return setupKey(pkgPath + "." + t.Name), true
			}
		}
	}
	return "", false
}

// typeKey is the setup key of "*pkg.T" or, in the test's own package,
// "*T", as written in p's file.
func (p *suitePort) typeKey(typ string) (setupKey, bool) {
	typ = strings.TrimPrefix(typ, "*")
	pkg, name, ok := strings.Cut(typ, ".")
	if !ok {
		return setupKey(p.pkgPath() + "." + typ), true
	}
	if p.f.Imports[pkg] == "" {
		return "", false
	}
	return setupKey(p.f.Imports[pkg] + "." + name), true
}

// pkgPath is the import path of the package p's file tests.
func (p *suitePort) pkgPath() string { return p.module + "/" + path.Dir(p.f.Rel) }

// render applies the edits, adds the imports the port needs and drops the
// controller-runtime imports it no longer uses.
func (p *suitePort) render() ([]byte, error) {
	f := p.f
	nodes := make([]ast.Node, 0, len(p.edits))
	for n := range p.edits {
		nodes = append(nodes, n)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Pos() > nodes[j].Pos() })
	src := append([]byte(nil), f.Src...)
	for _, n := range nodes {
		start, end := f.Fset.Position(n.Pos()).Offset, f.Fset.Position(n.End()).Offset
		src = append(src[:start:start], append([]byte(p.edits[n]), src[end:]...)...)
	}
	fset := token.NewFileSet()
	af, err := parser.ParseFile(fset, f.Rel, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("rewrite %s: %w", f.Rel, err)
	}
	used := map[string]bool{}
	ast.Inspect(af, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok {
				used[id.Name] = true
			}
		}
		return true
	})
	var drop [][2]int
	for _, imp := range af.Imports {
		ipath, _ := strconv.Unquote(imp.Path.Value)
		name := path.Base(ipath)
		if ipath == crRoot {
			name = "controllerruntime"
		}
		if imp.Name != nil {
			name = imp.Name.Name
		}
		if strings.HasPrefix(ipath, crRoot) && name != "_" && !used[name] {
			end := fset.Position(imp.End()).Offset
			if end < len(src) && src[end] == '\n' {
				end++
			}
			drop = append(drop, [2]int{fset.Position(imp.Pos()).Offset, end})
		}
	}
	for i := len(drop) - 1; i >= 0; i-- {
		src = append(src[:drop[i][0]:drop[i][0]], src[drop[i][1]:]...)
	}
	var add strings.Builder
	for name, ipath := range p.adds {
		if f.Imports[name] != ipath {
			fmt.Fprintf(&add, "\n\t%s %q", name, ipath)
		}
	}
	if add.Len() > 0 {
		i := strings.Index(string(src), "import (")
		if i < 0 {
			return nil, fmt.Errorf("rewrite %s: no import block", f.Rel)
		}
		i += len("import (")
		src = append(src[:i:i], append([]byte(add.String()), src[i:]...)...)
	}
	out, err := format.Source(src)
	if err != nil {
		return nil, fmt.Errorf("rewrite %s: %w", f.Rel, err)
	}
	return out, nil
}
