package metrics

import "net/http"

// status adds the status page's handlers to mux.
func (s *Set) status(mux *http.ServeMux) {}
