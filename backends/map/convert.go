package mapbackend

import (
	"encoding/json"
	"fmt"
)

// convert copies in into out through JSON: the v1 and v1beta1 types are
// generated from one schema.
func convert(in, out any) error {
	data, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("convert %T: %w", in, err)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("convert %T: %w", in, err)
	}
	return nil
}
