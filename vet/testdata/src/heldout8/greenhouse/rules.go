// Package greenhouse reacts to sensor readings: it records them and waters
// zones whose soil is too dry.
package greenhouse

type reading struct {
	Zone        string  `json:"zone"`
	Moisture    float64 `json:"moisture"`
	Temperature float64 `json:"temperature"`
}

type decision struct {
	water  bool
	litres int32
	reason string
}

// rule is one policy of the climate controller.
type rule interface {
	decide(r reading) (decision, bool)
}

type drySoil struct{ threshold float64 }

func (d drySoil) decide(r reading) (decision, bool) {
	if r.Moisture >= d.threshold {
		return decision{}, false
	}
	return decision{water: true, litres: int32((d.threshold - r.Moisture) * 40), reason: "dry soil"}, true
}

type heatWave struct{ above float64 }

func (h heatWave) decide(r reading) (decision, bool) {
	if r.Temperature <= h.above {
		return decision{}, false
	}
	return decision{water: true, litres: 5, reason: "heat"}, true
}

func firstDecision(rules []rule, r reading) (decision, bool) {
	for _, ru := range rules {
		if d, ok := ru.decide(r); ok {
			return d, true
		}
	}
	return decision{}, false
}
