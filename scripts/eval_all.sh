#!/usr/bin/env bash
# Reproduce every table of docs/evaluation.md from a fresh home (run from anywhere; `make eval`).
#
#   bash scripts/eval_all.sh [OUT_DIR]     (default OUT_DIR: eval-out)
#
# The twenty-five query sets (twenty-four of real documents, the sample job) at budgets 400 and 800, each with
# the engine_topk baseline row, and at 400 a budget sweep from 200 to 3000 tokens (every variant on
# the same candidates):
#   - the sample job (data/sample) with its profile (data/sample/profile.toml);
#   - the real-document set (data/realdocs) with the DEFAULT profile (no profile file),
#     ingested into its own index esbubble-realdocs;
#   - the second real-document set (data/realdocs2, questions written blind), default profile,
#     index esbubble-realdocs2;
#   - the third real-document set (data/realdocs3, questions written blind; a Word document and a
#     10-sheet workbook of 8,920 rows), default profile, index esbubble-realdocs3;
#   - the fourth real-document set (data/realdocs4, questions written blind), default profile,
#     index esbubble-realdocs4;
#   - the fifth real-document set (data/realdocs5, questions written blind; legal Markdown, a
#     23-sheet code-list workbook, a Word specification, a PDF specification), default profile,
#     index esbubble-realdocs5;
#   - the sixth real-document set (data/realdocs6, questions written blind; policy Markdown, a
#     4-sheet data-dictionary workbook, a Word standard, a PDF API manual), default profile,
#     index esbubble-realdocs6;
#   - the seventh real-document set (data/realdocs7, questions written blind; a privacy policy in
#     Markdown, a 13-sheet data-dictionary workbook, a Word specification of key-value field tables,
#     a PDF compiler manual), default profile, index esbubble-realdocs7;
#   - the eighth real-document set (data/realdocs8, questions written blind; a certificate policy in
#     Markdown, a 6-sheet codelist mapping workbook, a Word protocol standard, a PDF API
#     specification made from Word), default profile, index esbubble-realdocs8;
#   - the ninth real-document set (data/realdocs9, questions written blind; a security baseline in
#     Markdown, a 3-sheet checklist workbook, a Word API proposal, a PDF protocol specification
#     from LaTeX), default profile, index esbubble-realdocs9;
#   - the tenth real-document set (data/realdocs10, questions written blind; project governance
#     bylaws in Markdown, an 8-sheet data-dictionary workbook, a Word database model, a PDF
#     interconnect specification), default profile, index esbubble-realdocs10;
#   - the eleventh real-document set (data/realdocs11, questions written blind; a transit data
#     format reference in Markdown, a 53-sheet filing-format workbook, a Word user manual, a PDF
#     web-services guide), default profile, index esbubble-realdocs11;
#   - the twelfth real-document set (data/realdocs12, questions written blind; a project governance
#     charter in Markdown, a 6-sheet clinical data-dictionary workbook, a Word software manual, a PDF
#     firmware interface specification), default profile, index esbubble-realdocs12;
#   - the thirteenth real-document set (data/realdocs13, questions written blind; a browser privacy
#     notice in Markdown, a 7-sheet research data-model dictionary workbook, a Word API specification,
#     a PDF charging-protocol specification), default profile, index esbubble-realdocs13;
#   - the fourteenth real-document set (data/realdocs14, questions written blind; a data processing
#     agreement in Markdown, an 8-sheet education data-dictionary workbook, a Word data
#     documentation, a PDF material-description specification), default profile, index
#     esbubble-realdocs14;
#   - the fifteenth real-document set (data/realdocs15, questions written blind; a trademark
#     policy in Markdown, a 3-sheet plant-phenotyping checklist workbook, a Word human-services
#     data specification, a PDF sequence-alignment format specification), default profile, index
#     esbubble-realdocs15;
#   - the sixteenth real-document set (data/realdocs16, questions written blind; a preservation
#     plan in Markdown, an 8-sheet open-source policy template workbook, a Word metadata
#     application profile, a PDF climate-data conventions specification), default profile, index
#     esbubble-realdocs16;
#   - the seventeenth real-document set (data/realdocs17, questions written blind; terms of service
#     in Markdown, a 113-sheet solar-inverter information-model workbook, a Word metadata schema
#     documentation, a PDF processor reference manual), default profile, index esbubble-realdocs17;
#   - the eighteenth real-document set (data/realdocs18, questions written blind; an open-governance
#     proposal in Markdown, a 7-sheet health data-quality specification workbook, a Word API developer
#     guide, a PDF digital-nameplate specification), default profile, index esbubble-realdocs18;
#   - the nineteenth real-document set (data/realdocs19, questions written blind; a standards body's
#     workstream policy in Markdown, a 13-sheet cloud security benchmark workbook, a Word file-format
#     specification, a PDF semiconductor process specification), default profile, index
#     esbubble-realdocs19;
#   - the twentieth real-document set (data/realdocs20, questions written blind; an association's
#     bylaws in Markdown, a 7-sheet maturity assessment workbook with text boxes, a Word software
#     requirements specification (the first set's), a PDF protocol specification), default profile,
#     index esbubble-realdocs20;
#   - the twenty-first real-document set (data/realdocs21, questions written blind; a research
#     platform's terms of use in Markdown, a 3-sheet units-of-measure code list workbook, a Word
#     instrument-protocol specification, a PDF devicetree specification), default profile, index
#     esbubble-realdocs21;
#   - the twenty-second real-document set (data/realdocs22, questions written blind; a preprint
#     archive's privacy policy in Markdown, a 16-sheet sustainability reporting template workbook, a
#     Word co-simulation interface specification, a PDF packet-processing language specification),
#     default profile, index esbubble-realdocs22;
#   - the twenty-third real-document set (data/realdocs23, questions written blind; a software
#     project's bylaws in Markdown, a survey form workbook with its choice lists, a Word
#     climate-data-system requirements draft, a PDF genealogy data format specification), default
#     profile, index esbubble-realdocs23;
#   - the twenty-fourth real-document set (data/realdocs24, questions written blind; a hackathon
#     league's privacy policy in Markdown, a 9-sheet data-dictionary upload template workbook with its
#     code lists, a Word light-scattering code user manual, a PDF soft-core CPU specification), default
#     profile, index esbubble-realdocs24;
# then the delivery tables. Writes OUT_DIR/<set>-<budget>.{json,md}, OUT_DIR/delivery.md (sample
# job) and OUT_DIR/delivery-realdocs.md; the .md files are the tables as docs/evaluation.md shows them.
# A temporary ESBUBBLE_HOME (deleted at the end) keeps your own indices out of it.
#
# EVAL_PROFILE=p.toml runs the real-document sets under that profile instead of the default one
# (ingest and eval; the sample job keeps its own), e.g. data/profiles/semantic.toml for the tables of
# the sentence-embedding similarity.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
ESBUBBLE=${ESBUBBLE:-.venv/bin/esbubble}
OUT=${1:-eval-out}
REAL_PROFILE=()
[ -n "${EVAL_PROFILE:-}" ] && REAL_PROFILE=(--profile "$EVAL_PROFILE")
SWEEP=200,300,400,600,800,1000,1500,2000,3000
# The real-document sets, each in its own index esbubble-<set>, all with the default profile.
REAL_SETS="realdocs realdocs2 realdocs3 realdocs4 realdocs5 realdocs6 realdocs7 realdocs8 realdocs9 realdocs10 realdocs11 realdocs12 realdocs13 realdocs14 realdocs15 realdocs16 realdocs17 realdocs18 realdocs19 realdocs20 realdocs21 realdocs22 realdocs23 realdocs24"
mkdir -p "$OUT"
ESBUBBLE_HOME=$(mktemp -d)
export ESBUBBLE_HOME
cleanup() {
    "$ESBUBBLE" engine stop >/dev/null 2>&1 || true
    rm -rf "$ESBUBBLE_HOME"
}
trap cleanup EXIT

"$ESBUBBLE" engine start
"$ESBUBBLE" init
"$ESBUBBLE" ingest data/sample --profile data/sample/profile.toml
for set in $REAL_SETS; do
    "$ESBUBBLE" ingest "data/$set/docs" --index "esbubble-$set" "${REAL_PROFILE[@]}"
done
# Measure the engine as it runs day to day, not as it is right after the writes: osmem scores an
# index written in several _bulk requests (one per document) differently from the same documents
# loaded at once, which is what it does at every start (docs/operations.md, "Engine statistics").
"$ESBUBBLE" engine stop
"$ESBUBBLE" engine start

for budget in 400 800; do
    # The 400 run also sweeps the budget from tight to loose (the same candidates, every variant).
    sweep=()
    [ "$budget" = 400 ] && sweep=(--sweep "$SWEEP")
    "$ESBUBBLE" eval data/sample/queries.jsonl --profile data/sample/profile.toml --budget "$budget" \
        "${sweep[@]}" --json >"$OUT/sample-$budget.json"
    for set in $REAL_SETS; do
        "$ESBUBBLE" eval "data/$set/queries.jsonl" --index "esbubble-$set" --budget "$budget" \
            "${REAL_PROFILE[@]}" "${sweep[@]}" --json >"$OUT/$set-$budget.json"
    done
    for set in sample $REAL_SETS; do
        "$PYTHON" scripts/eval_markdown.py <"$OUT/$set-$budget.json" >"$OUT/$set-$budget.md"
    done
done
"$PYTHON" scripts/eval_delivery.py >"$OUT/delivery.md"
"$PYTHON" scripts/eval_delivery.py --set realdocs >"$OUT/delivery-realdocs.md"
echo "tables written to $OUT/"
