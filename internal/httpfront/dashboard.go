package httpfront

import (
	"net"
	"net/http"

	"github.com/hivetools/hive/internal/dashboard"
)

// dashboard makes the front end's dashboard (the page at /, /login and
// /api/) and returns its handler, behind the Host and Origin checks. It
// authenticates by itself: the bearer token or a session cookie.
func (f *Front) dashboard(o Options) http.Handler {
	do := dashboard.Options{Service: f.svc, State: f.apiState, Logger: f.log,
		ReadTimeout: f.readTimeout, WriteTimeout: f.writeTimeout, LogoutsFile: o.Layout.DashboardLogouts(),
		TakeoverLife: o.TakeoverLife}
	if t := f.token; t != nil {
		do.Secret = t.current
		do.Bearer = func(r *http.Request) (bool, error) {
			sum, err := t.current()
			if err != nil {
				return false, err
			}
			return authorized(r.Header.Values("Authorization"), sum), nil
		}
	}
	f.dash = dashboard.New(do)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.admitHost(w, r) {
			f.dash.ServeHTTP(w, r)
		}
	})
}

// LoginURL is a one-time login URL of the dashboard.
func (f *Front) LoginURL() string {
	return "http://" + loginHost(f.addr) + "/login?code=" + f.dash.LoginCode()
}

// loginHost is the host:port a login URL names for the address the
// daemon listens on: an unspecified address (0.0.0.0, [::]) is no place
// a browser can go, so 127.0.0.1 stands for it
// (hive dashboard runs on this machine; --base-url names another).
func loginHost(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1" // Go listens on both families for [::] and 0.0.0.0 alike
	}
	return net.JoinHostPort(host, port)
}
