// A webpack loader for the deploy test: the same workflow code with one prompt constant changed, as a
// later build would have it.
module.exports = function changedPrompt(source) {
  const rule = "'<rule>Keep tool invocation payloads in the native tool channel.</rule>',";
  if (!source.includes(rule)) throw new Error('changed-prompt-loader: the prompt constant it changes is gone');
  return source.replace(rule, `${rule}\n  '<rule>Deployed later: answer briefly.</rule>',`);
};
