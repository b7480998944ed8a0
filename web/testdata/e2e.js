// End-to-end script of the web view, driven by the Go test
// (internal/cli/ui_e2e_test.go) in a real browser: Debian's chromium
// through playwright-core. Usage:
//   node e2e.js live|records BASE_URL TOKEN SHOT_DIR
// It prints "step NAME" lines the Go test waits for (and acts on), "weight
// PAGE BYTES" for the bytes a first load transfers, and exits non-zero
// with the reason when an expectation fails.
"use strict";
const { chromium } = require("playwright-core");
const [mode, base, token, shots] = process.argv.slice(2);
const step = (s) => console.log("step " + s);
const T = 30000;

async function login(page) {
  await page.goto(base + "/ui/login");
  await page.fill("#token", token);
  await Promise.all([page.waitForNavigation(), page.press("#token", "Enter")]); // keyboard only
}

// weight sums the bytes of every response of a first load (the event
// stream, which never ends, is left out).
function weigh(page) {
  const sizes = [];
  page.on("response", async (r) => {
    if (r.url().includes("/ui/events")) return;
    try { sizes.push((await r.body()).length); } catch (e) { /* redirects have no body */ }
  });
  return () => sizes.reduce((a, b) => a + b, 0);
}

async function live(page) {
  let total = weigh(page);
  await page.goto(base + "/ui/login");
  await page.waitForLoadState("networkidle").catch(() => {});
  console.log("weight login " + total());
  await login(page);
  await page.waitForSelector("#conn.on", { timeout: T });
  // A first load of the live page in a fresh browser context (nothing cached).
  const ctx2 = await page.context().browser().newContext();
  await ctx2.addCookies(await page.context().cookies());
  const fresh = await ctx2.newPage();
  total = weigh(fresh);
  await fresh.goto(base + "/ui/");
  await fresh.waitForSelector("#conn.on", { timeout: T });
  console.log("weight live " + total());
  await ctx2.close();
  total = weigh(page);
  await page.reload();
  await page.waitForSelector("#conn.on", { timeout: T });
  console.log("weight live-reload " + total());
  await page.screenshot({ path: shots + "/1-live-empty.png", fullPage: true });
  step("live");

  // An execute stream: its first line shows while the call still runs.
  const card = page.locator("article.call", { hasText: "tick 1" });
  await card.locator("pre.out", { hasText: "tick 1" }).waitFor({ timeout: T });
  await card.locator(".pill.running").waitFor({ timeout: T });
  await page.screenshot({ path: shots + "/2-live-streaming.png", fullPage: true });
  step("saw-tick1");
  await card.locator("pre.out", { hasText: "tick 2" }).waitFor({ timeout: T });
  await card.locator(".pill.ok").waitFor({ timeout: T });
  step("streamed");

  // Approve one confirm: it shows target, scope and consequence.
  let c = page.locator("article.confirm", { hasText: "rm -rf keep-a" });
  await c.waitFor({ timeout: T });
  for (const want of ["workspace shell", "runs the command with your user's rights"]) {
    if (!(await c.innerText()).includes(want)) throw new Error("the confirm lacks " + want);
  }
  await page.screenshot({ path: shots + "/3-confirm.png", fullPage: true });
  await c.locator("button.approve").focus();
  await page.keyboard.press("Enter");
  await page.locator("article.confirm", { hasText: "rm -rf keep-a" }).waitFor({ state: "detached", timeout: T });
  step("approved");

  // Reject another.
  c = page.locator("article.confirm", { hasText: "rm -rf keep-b" });
  await c.waitFor({ timeout: T });
  await c.locator("input[aria-label=note]").fill("keep it");
  await c.locator("button.reject").click();
  await c.waitFor({ state: "detached", timeout: T });
  step("rejected");

  // ask_user_question, answered here.
  const q = page.locator("article.question", { hasText: "Which branch?" });
  await q.waitFor({ timeout: T });
  await page.screenshot({ path: shots + "/3b-question.png", fullPage: false });
  await q.locator("button", { hasText: "dev" }).click();
  await q.waitFor({ state: "detached", timeout: T });
  step("answered");

  // Stop a long command.
  const long = page.locator("article.call", { hasText: "up-42" }).filter({ has: page.locator(".pill.running") });
  await long.waitFor({ timeout: T });
  step("stopping");
  await long.locator("button.stop").click();
  const stopped = page.locator("article.call", { hasText: "up-42" }).filter({ has: page.locator(".pill.error") });
  await stopped.waitFor({ timeout: T });
  if (!(await stopped.innerText()).includes("cancelled")) throw new Error("the stopped call does not say cancelled: " + (await stopped.innerText()));
  await page.screenshot({ path: shots + "/4-live-after.png", fullPage: true });
  step("stopped");

  // A reload (a new snapshot and event stream) keeps the view.
  await page.reload();
  await page.waitForSelector("#conn.on", { timeout: T });
  const again = page.locator("article.call", { hasText: "up-42" }).filter({ has: page.locator(".pill.error") });
  await again.waitFor({ timeout: T });
  if ((await page.locator("article.call").count()) < 5) throw new Error("the reloaded view lost calls");

  step("done");
}

async function records(page) {
  await login(page);
  await page.waitForSelector("text=Where calls fail", { timeout: T });
  const ctx2 = await page.context().browser().newContext();
  await ctx2.addCookies(await page.context().cookies());
  const fresh = await ctx2.newPage();
  const total = weigh(fresh);
  await fresh.goto(base + "/ui/tasks");
  await fresh.waitForSelector("text=Where calls fail", { timeout: T });
  console.log("weight tasks " + total());
  await ctx2.close();
  await page.screenshot({ path: shots + "/5-tasks.png", fullPage: true });
  await page.locator("td a[href^='/ui/tasks/']").first().click();
  await page.waitForSelector("text=Failures by stage", { timeout: T });
  await page.screenshot({ path: shots + "/6-task.png", fullPage: true });
  await page.locator("tr", { hasText: "seq 1 40000" }).locator("a[href^='/ui/calls/']").click();
  await page.waitForSelector("text=recovery pointer", { timeout: T });
  const facts = await page.locator("dl.facts").innerText();
  if (!/trim/.test(facts) || !/view_tool_call/.test(facts)) throw new Error("the call page lacks the compaction or the pointer: " + facts);
  const rec = page.locator("#record");
  const pos1 = await rec.locator(".pos").innerText();
  const m = /page 1 of (\d+)/.exec(pos1);
  if (!m || +m[1] < 2) throw new Error("the record is not paged: " + pos1);
  const cl = page.locator("#client");
  if (!/complete output/.test(await cl.innerText())) throw new Error("the client pane is not the complete output: " + (await cl.locator("h2").innerText()));
  await page.screenshot({ path: shots + "/7-call-page1.png", fullPage: false });
  await cl.locator("a[rel=next]").click();
  await page.locator("#client .pos", { hasText: "page 2 of" }).waitFor({ timeout: T });
  const c2 = await page.locator("#client pre").innerText();
  if (!c2.includes("\n5000\n") || c2.includes("\n100\n")) throw new Error("client page 2 does not go on from page 1: " + c2.slice(0, 60));
  await rec.locator("a[rel=next]").click();
  await page.locator("#record .pos", { hasText: "page 2 of" }).waitFor({ timeout: T });
  const text = await page.locator("#record pre").innerText();
  console.log("page2 " + text.slice(0, 40).replace(/\n/g, " "));
  await page.screenshot({ path: shots + "/8-call-page2.png", fullPage: false });
  await page.goto(base + "/ui/search?tool=execute&stage=authorization");
  await page.waitForSelector("text=rm -rf keep-b", { timeout: T });
  await page.screenshot({ path: shots + "/9-search.png", fullPage: true });
  step("done");
}

(async () => {
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"] });
  try {
    const page = await browser.newPage({ viewport: { width: 1366, height: 800 } });
    page.on("pageerror", (e) => console.log("pageerror " + e.message));
    page.on("console", (m) => console.log("console " + m.type() + " " + m.text()));
    try {
      await (mode === "live" ? live(page) : records(page));
    } catch (e) {
      await page.screenshot({ path: shots + "/fail-" + mode + ".png", fullPage: true }).catch(() => {});
      console.log("url " + page.url());
      throw e;
    }
  } finally {
    await browser.close();
  }
})().catch((e) => { console.error("FAIL " + (e && e.stack || e)); process.exit(1); });
