package qualify

import (
	"time"

	"example.com/apitest/consts"
	"example.com/apitest/internal/hidden"
	ext "example.org/ext"
)

func Use(consts.Mode, time.Duration, *ext.Config) hidden.Thing { return hidden.Thing{} }
