// JUnit XML for CI dashboards: one test suite per task (a test case per receipt) and one for the
// policies (a test case per policy). Failures carry the reasons.
import type { VerifyReport } from './verify.js';

/** Text safe in XML: escaped, and without the control characters XML 1.0 forbids. */
function xml(text: string): string {
  return (
    text
      // eslint-disable-next-line no-control-regex
      .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, '\ufffd')
      .replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd')
      .replace(/&/g, '&amp;')
      .replace(/</g, '&lt;')
      .replace(/>/g, '&gt;')
      .replace(/"/g, '&quot;')
      .replace(/'/g, '&apos;')
  );
}

function short(text: string, max = 100): string {
  const one = text.replace(/\s+/g, ' ').trim();
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

export function renderJunit(report: VerifyReport): string {
  const suites: string[] = [];
  for (const set of report.sets) {
    const cases: string[] = [];
    for (const problem of set.problems) {
      cases.push(
        `    <testcase classname="atlas.verify.${xml(set.taskId)}" name="task ${xml(set.taskId)}">\n      <failure message="${xml(problem)}" type="task"/>\n    </testcase>`,
      );
    }
    for (const r of set.results) {
      const name = `${r.receipt.receipt_id} #${r.index} ${r.receipt.step_name}: ${short(r.receipt.command)}`;
      const head = `    <testcase classname="atlas.verify.${xml(set.taskId)}" name="${xml(name)}"`;
      if (r.valid) {
        cases.push(`${head}/>`);
      } else {
        const message = r.problems.map((p) => p.message).join('; ');
        cases.push(
          `${head}>\n      <failure message="${xml(short(message, 300))}" type="${xml(r.problems[0]!.check)}">${xml(r.problems.map((p) => `${p.check}: ${p.message}`).join('\n'))}</failure>\n    </testcase>`,
        );
      }
    }
    const failures = set.results.filter((r) => !r.valid).length + set.problems.length;
    suites.push(
      `  <testsuite name="${xml(`receipts ${set.taskId} (${set.source})`)}" tests="${cases.length}" failures="${failures}" errors="0" skipped="0">\n${cases.join('\n')}${cases.length ? '\n' : ''}  </testsuite>`,
    );
  }
  const policyCases = report.policies.map((p) => {
    const head = `    <testcase classname="atlas.verify.policies" name="${xml(p.name)}"`;
    return p.ok
      ? `${head}/>`
      : `${head}>\n      <failure message="${xml(short(p.detail, 300))}" type="policy">${xml(p.detail)}</failure>\n    </testcase>`;
  });
  const unmet = report.policies.filter((p) => !p.ok).length;
  suites.push(
    `  <testsuite name="policies" tests="${policyCases.length}" failures="${unmet}" errors="0" skipped="0">\n${policyCases.join('\n')}${policyCases.length ? '\n' : ''}  </testsuite>`,
  );
  const tests = report.sets.reduce((n, s) => n + s.results.length + s.problems.length, 0) + report.policies.length;
  const failures = report.summary.invalid + unmet + report.sets.reduce((n, s) => n + s.problems.length, 0);
  return `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="atlas verify" tests="${tests}" failures="${failures}" errors="0">\n${suites.join('\n')}\n</testsuites>\n`;
}
