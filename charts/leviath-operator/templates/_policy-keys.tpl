{{- /*
leviath.checkPolicyKeys: fails naming the first unknown key of a LeviathPolicy spec, walking it against the key
tree generated from the zod schemas (files/policy-spec-keys.json: p = an object's keys, i = array items, v = map
values). values.schema.json checks policy.spec the same way; this covers policy.document, a YAML string that
JSON Schema cannot look into. Called with (list node tree path).
*/ -}}
{{- define "leviath.checkPolicyKeys" -}}
{{- $node := index . 0 -}}
{{- $tree := index . 1 -}}
{{- $path := index . 2 -}}
{{- if and (kindIs "map" $node) (hasKey $tree "p") -}}
{{- range $key, $value := $node -}}
{{- if not (hasKey $tree.p $key) -}}
{{- fail (printf "policy.document: %s: unknown key '%s' (valid: %s)" $path $key (keys $tree.p | sortAlpha | join ", ")) -}}
{{- end -}}
{{- include "leviath.checkPolicyKeys" (list $value (get $tree.p $key) (printf "%s.%s" $path $key)) -}}
{{- end -}}
{{- else if and (kindIs "slice" $node) (hasKey $tree "i") -}}
{{- range $i, $item := $node -}}
{{- include "leviath.checkPolicyKeys" (list $item $tree.i (printf "%s[%d]" $path $i)) -}}
{{- end -}}
{{- else if and (kindIs "map" $node) (hasKey $tree "v") -}}
{{- range $key, $value := $node -}}
{{- include "leviath.checkPolicyKeys" (list $value $tree.v (printf "%s.%s" $path $key)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
