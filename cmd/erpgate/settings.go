package main

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/sap"
	"github.com/erpgate/erpgate/erp/sim"
)

// A parser reads one setting's value, as given, into c. Its error says
// what is wrong with the value, without naming the setting: apply puts the
// flag and its environment variable in front; whys are several messages.
// A parser sets its fields even for a value
// it refuses (to the zero value when it does not parse), so that the
// checks between settings see what was given; a refused value fails the
// whole configuration anyway.
//
// Parsers must not name settings themselves (settingError reads the
// settings table, which holds them).
type parser func(value string, c *config) error

// apply parses value into c and returns what is wrong with it, each
// message naming s's flag and environment variable.
func (s setting) apply(value string, c *config) []error {
	err := s.parse(value, c)
	if err == nil {
		return nil
	}
	list, ok := err.(whys)
	if !ok {
		list = whys{err.Error()}
	}
	errs := make([]error, len(list))
	for i, why := range list {
		errs[i] = settingError(s.name, why)
	}
	return errs
}

// whys are several things wrong with one value, each its own message.
type whys []string

func (w whys) Error() string { return strings.Join(w, "; ") }

// settingError is why, about the setting called name.
func settingError(name, why string) error {
	return fmt.Errorf("-%s (%s): %s", name, envOf(name), why)
}

// Messages shared by several settings.
const (
	positiveDuration = "must be a positive duration such as 2s"
	atLeastASecond   = "must be a duration of at least 1s"
	absoluteHTTPURL  = "must be an absolute http(s) URL"
)

// trimmed is p on the value without surrounding white space.
func trimmed(p parser) parser {
	return func(value string, c *config) error { return p(strings.TrimSpace(value), c) }
}

// optional is p for a value that is not empty once trimmed; an empty one
// leaves c as it is.
func optional(p parser) parser {
	return trimmed(func(value string, c *config) error {
		if value == "" {
			return nil
		}
		return p(value, c)
	})
}

// readFirst is the parser of -config: the file is read before every other
// setting, by loadConfigFile.
func readFirst(string, *config) error { return nil }

// textSetting takes any value, trimmed.
func textSetting(set func(c *config, v string)) parser {
	return trimmed(func(v string, c *config) error {
		set(c, v)
		return nil
	})
}

// secretSetting takes any value as given, white space included: a
// password may end in a space.
func secretSetting(set func(c *config, v string)) parser {
	return func(v string, c *config) error {
		set(c, v)
		return nil
	}
}

// fileSetting takes the name of a file that exists, or nothing.
func fileSetting(set func(c *config, path string)) parser {
	return optional(func(path string, c *config) error {
		set(c, path)
		if _, err := os.Stat(path); err != nil {
			return errors.New("cannot read the file")
		}
		return nil
	})
}

// addrSetting takes host:port with a numeric port from 0 to 65535; the
// host may be empty, for every interface. examples end its message.
func addrSetting(examples string, set func(c *config, addr string)) parser {
	return trimmed(func(addr string, c *config) error {
		set(c, addr)
		if !validAddr(addr) {
			return errors.New("must be host:port with a port from 0 to 65535, such as " + examples)
		}
		return nil
	})
}

// urlSetting takes an absolute URL with one of schemes, or nothing; why
// is its message.
func urlSetting(why string, schemes []string, set func(c *config, u string)) parser {
	return optional(func(u string, c *config) error {
		set(c, u)
		if !absoluteURL(u, schemes...) {
			return errors.New(why)
		}
		return nil
	})
}

// httpURLSetting takes an absolute http(s) URL, or nothing.
func httpURLSetting(set func(c *config, u string)) parser {
	return urlSetting(absoluteHTTPURL, []string{"http", "https"}, set)
}

// absoluteURL reports whether s is a URL with a host and one of schemes.
func absoluteURL(s string, schemes ...string) bool {
	u, err := url.Parse(s)
	return err == nil && slices.Contains(schemes, u.Scheme) && u.Host != ""
}

// durationSetting takes a duration of at least min; why is its message.
func durationSetting(min time.Duration, why string, set func(c *config, d time.Duration)) parser {
	return trimmed(func(v string, c *config) error {
		d, err := time.ParseDuration(v)
		set(c, d)
		if err != nil || d < min {
			return errors.New(why)
		}
		return nil
	})
}

// boolSetting takes true or false (or another spelling strconv.ParseBool
// knows, such as 1 or 0).
func boolSetting(set func(c *config, on bool)) parser {
	return trimmed(func(v string, c *config) error {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return errors.New("must be true or false")
		}
		set(c, on)
		return nil
	})
}

// intSetting takes a whole number from min to max; why is its message.
func intSetting[T int | int64](min, max T, why string, set func(c *config, n T)) parser {
	return trimmed(func(v string, c *config) error {
		n, err := strconv.ParseInt(v, 10, 64)
		set(c, T(n))
		if err != nil || n < int64(min) || n > int64(max) {
			return errors.New(why)
		}
		return nil
	})
}

// decimalSetting takes a number that is not negative; why is its message.
func decimalSetting(why string, set func(c *config, d decimal.Decimal)) parser {
	return trimmed(func(v string, c *config) error {
		d, err := decimal.NewFromString(v)
		set(c, d)
		if err != nil || d.IsNegative() {
			return errors.New(why)
		}
		return nil
	})
}

// enumSetting takes one of values.
func enumSetting(set func(c *config, v string), values ...string) parser {
	why := "must be " + strings.Join(values[:len(values)-1], ", ") + " or " + values[len(values)-1]
	return trimmed(func(v string, c *config) error {
		set(c, v)
		if !slices.Contains(values, v) {
			return errors.New(why)
		}
		return nil
	})
}

// parseERPURL is -erp-url: an absolute http(s) URL, kept without trailing
// slashes; empty for the simulated ERP.
func parseERPURL(v string, c *config) error {
	v = strings.TrimRight(strings.TrimSpace(v), "/")
	return httpURLSetting(func(c *config, u string) { c.erpURL = u })(v, c)
}

// parseERPCA is -erp-ca: a PEM bundle holding at least one certificate.
func parseERPCA(v string, c *config) error {
	return optional(func(path string, c *config) error {
		c.erpIn.ca = path
		if _, err := sap.ClientTLS("", "", path); err != nil {
			return errors.New(strings.TrimPrefix(err.Error(), "sap: "))
		}
		return nil
	})(v, c)
}

// sapClientPattern is an SAP client: three digits.
var sapClientPattern = regexp.MustCompile(`^[0-9]{3}$`)

// parseSAPClient is -sap-client: three digits, or nothing.
func parseSAPClient(v string, c *config) error {
	return optional(func(client string, c *config) error {
		c.sapClient = client
		if !sapClientPattern.MatchString(client) {
			return errors.New("must be three digits, such as 100")
		}
		return nil
	})(v, c)
}

// parseRetryBudget is -retry-budget: the share of calls that may be
// retried, from 0 to 1; 0 turns the budget off.
// floatSetting parses a number that is 0 or more.
func floatSetting(why string, set func(c *config, f float64)) parser {
	return trimmed(func(v string, c *config) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
			return errors.New(why)
		}
		set(c, f)
		return nil
	})
}

func parseRetryBudget(v string, c *config) error {
	ratio, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	switch {
	case err != nil || ratio < 0 || ratio > 1:
		return errors.New("must be a number from 0 to 1")
	case ratio == 0:
		c.retry.Budget.Disabled = true
	default:
		c.retry.Budget.Deposit = ratio
	}
	return nil
}

// parseSimFaults is -sim-faults, in the grammar of sim.ParseFaults.
func parseSimFaults(v string, c *config) error {
	var err error
	c.simFaults, err = sim.ParseFaults(strings.TrimSpace(v))
	return err
}

// parseSimSeed is -sim-seed: a whole number that is not negative.
func parseSimSeed(v string, c *config) error {
	var err error
	if c.simSeed, err = strconv.ParseUint(strings.TrimSpace(v), 10, 64); err != nil {
		return errors.New("must be a whole number")
	}
	return nil
}

// parseApprovalRules is -approval-rules: a JSON file of routing rules, in
// the form of erp.ParseRouting.
func parseApprovalRules(v string, c *config) error {
	return optional(func(path string, c *config) error {
		c.approvalRules = path
		data, err := os.ReadFile(path)
		if err != nil {
			return errors.New("cannot read the file")
		}
		c.routing, err = erp.ParseRouting(data)
		return err
	})(v, c)
}

// parseRedisURL is -redis-url: a URL go-redis can dial, or nothing.
func parseRedisURL(v string, c *config) error {
	return optional(func(u string, c *config) error {
		c.redisURL = u
		if _, err := redis.ParseURL(u); err != nil {
			return errors.New("must be a redis:// or rediss:// URL")
		}
		return nil
	})(v, c)
}

// parseAPIKeys is -api-keys: credentials in the form of
// api.ParseCredential, separated by commas; each wrong one is reported.
func parseAPIKeys(v string, c *config) error {
	return optional(func(keys string, c *config) error {
		var wrong whys
		for _, k := range strings.Split(keys, ",") {
			cred, err := api.ParseCredential(k)
			if err != nil {
				wrong = append(wrong, err.Error())
				continue
			}
			c.credentials = append(c.credentials, cred)
		}
		if wrong != nil {
			return wrong
		}
		return nil
	})(v, c)
}

// parseDebugAddr is -debug-addr: a loopback host:port, or nothing.
// parseTrustedProxies reads comma separated networks in CIDR notation; a
// bare address is a network of one.
func parseTrustedProxies(v string, c *config) error {
	return optional(func(list string, c *config) error {
		for _, p := range strings.Split(list, ",") {
			p = strings.TrimSpace(p)
			prefix, err := netip.ParsePrefix(p)
			if err != nil {
				addr, aerr := netip.ParseAddr(p)
				if aerr != nil {
					return errors.New("must be networks in CIDR notation, comma separated, such as 10.0.0.0/8,192.168.1.7")
				}
				prefix = netip.PrefixFrom(addr, addr.BitLen())
			}
			c.trustedProxies = append(c.trustedProxies, prefix.Masked())
		}
		return nil
	})(v, c)
}

func parseDebugAddr(v string, c *config) error {
	return optional(func(addr string, c *config) error {
		c.debugAddr = addr
		if !validAddr(addr) || !isLoopback(addr) {
			return errors.New("must be a loopback address with a port from 0 to 65535, such as 127.0.0.1:6060")
		}
		return nil
	})(v, c)
}

// validAddr reports whether addr is host:port with a numeric port from 0
// to 65535; the host may be empty, for every interface.
func validAddr(addr string) bool {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	_, err = strconv.ParseUint(port, 10, 16)
	return err == nil
}
