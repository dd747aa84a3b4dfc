package bodybudget_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/opkit-dev/opkit/internal/bodybudget"
)

// A handler admits each body before it reads it: with the shared part
// taken by a large body, another large one is shed and a small one served.
func Example() {
	b := bodybudget.New(14<<20, 7<<20)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		release, err := b.Admit(w, r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		defer release()
		w.WriteHeader(http.StatusOK)
	})
	hold, _ := b.Admit(httptest.NewRecorder(), &http.Request{ContentLength: 12 << 20})
	defer hold()
	for _, length := range []int64{6 << 20, 4 << 10} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, &http.Request{ContentLength: length})
		fmt.Println(length, w.Code)
	}
	_, err := b.Admit(httptest.NewRecorder(), &http.Request{ContentLength: 1 << 20})
	fmt.Println(errors.Is(err, bodybudget.ErrFull))
	// Output:
	// 6291456 503
	// 4096 200
	// true
}
