// Command promqlrefs parses PromQL expressions with Prometheus's own parser
// and prints the series each one reads: for every vector selector, the
// metric name and the label names the query needs it to carry (those its
// matchers name, and those an enclosing aggregation groups by or a binary
// operation matches on).
//
// It reads a JSON array of {"source", "expr"} from standard input and
// writes a JSON array of {"source", "metric", "labels"} to standard output;
// an expression that does not parse is an error naming its source. It lives
// in the promtool tool module, not in opkit's go.mod, so that Prometheus's
// dependencies do not raise the versions every opkit user builds with
// (config/monitoring's test runs it).
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
)

// Query is one expression and where it comes from ("dashboard.json: Reconcile rate").
type Query struct {
	Source string `json:"source"`
	Expr   string `json:"expr"`
}

// Ref is one series a query reads.
type Ref struct {
	Source string   `json:"source"`
	Metric string   `json:"metric"`
	Labels []string `json:"labels"`
}

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "promqlrefs: %v\n", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) error {
	var queries []Query
	if err := json.NewDecoder(in).Decode(&queries); err != nil {
		return fmt.Errorf("decode queries: %w", err)
	}
	p := parser.NewParser(parser.Options{})
	var refs []Ref
	var errs []error
	for _, q := range queries {
		expr, err := p.ParseExpr(q.Expr)
		if err != nil {
			errs = append(errs, fmt.Errorf("parse %s: %w", q.Source, err))
			continue
		}
		refs = append(refs, selectors(q.Source, expr)...)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return json.NewEncoder(out).Encode(refs)
}

// selectors returns the series expr reads.
func selectors(source string, expr parser.Expr) []Ref {
	var refs []Ref
	parser.Inspect(expr, func(n parser.Node, path []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		ref := Ref{Source: source, Metric: vs.Name}
		for _, m := range vs.LabelMatchers {
			if m.Name != model.MetricNameLabel {
				ref.Labels = append(ref.Labels, m.Name)
			}
		}
		for i, a := range path {
			child := n
			if i+1 < len(path) {
				child = path[i+1]
			}
			ref.Labels = append(ref.Labels, required(a, child)...)
		}
		slices.Sort(ref.Labels)
		ref.Labels = slices.Compact(ref.Labels)
		refs = append(refs, ref)
		return nil
	})
	return refs
}

// required returns the labels an enclosing node n needs its operand child
// to carry: an aggregation's by labels; a binary operation's on labels, and
// the labels group_left (group_right) copies from its right (left) side.
// without and ignoring name labels a series may lack, so they are not.
func required(n, child parser.Node) []string {
	switch n := n.(type) {
	case *parser.AggregateExpr:
		if !n.Without {
			return n.Grouping
		}
	case *parser.BinaryExpr:
		m := n.VectorMatching
		if m == nil || !m.On {
			return nil
		}
		need := slices.Clone(m.MatchingLabels)
		if (m.Card == parser.CardManyToOne && child == n.RHS) || (m.Card == parser.CardOneToMany && child == n.LHS) {
			need = append(need, m.Include...)
		}
		return need
	}
	return nil
}
