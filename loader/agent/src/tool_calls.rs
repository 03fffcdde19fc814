//! Running the tool calls of one assistant message (pi's order): `tool_execution_start` and
//! `tool_call` for each call in source order (a blocked or unknown call ends at once with an
//! error result and gets no `tool_result`), then the allowed calls run concurrently, each
//! followed by its `tool_result` patch chain and `tool_execution_end` in completion order; the
//! `toolResult` messages are then added in source order.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{Core, Shared, now_ms};
use crate::tools::mutation_queue::Ticket;
use crate::tools::{Tool, ToolInvocation, ToolOutput};
use pi_hooks_host::runner::Runner;
use pi_hooks_host::runner::events::ToolCallOutcome;

impl Core {
    pub(super) fn active_tool_specs(&self) -> Vec<Value> {
        let tools = self.tools();
        let active = Shared::lock(&self.shared.active_tools).clone();
        tools
            .iter()
            .filter(|t| active.iter().any(|a| a == t.name()))
            .map(|t| json!({"name": t.name(), "description": t.description(), "parameters": t.parameters()}))
            .collect()
    }

    fn find_tool(&self, name: &str) -> Option<Arc<dyn Tool>> {
        let tools = self.tools();
        let active = Shared::lock(&self.shared.active_tools);
        if !active.iter().any(|a| a == name) {
            return None;
        }
        tools.iter().find(|t| t.name() == name).cloned()
    }

    /// Runs the tool calls of one assistant message; returns the toolResult messages in
    /// source order, and whether every call was blocked with `terminate` (pi 1.6: the run
    /// then ends after this batch).
    pub(super) fn execute_tools(&self, calls: &[Value]) -> (Vec<Value>, bool) {
        let mut terminating = 0;
        let mut outputs: Vec<Option<ToolOutput>> = vec![None; calls.len()];
        // An allowed call and its input: what a `tool_call` handler rewrote it to, else the
        // prepared and validated (coerced) arguments.
        let mut allowed: Vec<(usize, Arc<dyn Tool>, Option<Value>)> = Vec::new();
        for (index, call) in calls.iter().enumerate() {
            let (id, name, args) = call_parts(call);
            self.emit(json!({"type": "tool_execution_start", "toolCallId": id, "toolName": name, "args": args}));
            let Some(tool) = self.find_tool(name) else {
                outputs[index] = Some(
                    self.finish_early(call, ToolOutput::error(format!("Tool {name} not found"))),
                );
                continue;
            };
            // pi: `prepareArguments`, then validation, which coerces (pi-schema); handlers and
            // the tool see the coerced arguments.
            let prepared = tool.prepare_arguments(args);
            let input = match tool.validate(prepared.as_ref().unwrap_or(args)) {
                Ok(coerced) => coerced,
                Err(message) => {
                    outputs[index] = Some(self.finish_early(call, ToolOutput::error(message)));
                    continue;
                }
            };
            let mut rewritten = None;
            if self.runner.has_handlers("tool_call") {
                match self
                    .runner
                    .emit_tool_call_terminating(Runner::tool_call_payload(id, name, &input))
                {
                    (ToolCallOutcome::Block { reason }, terminate) => {
                        terminating += usize::from(terminate);
                        outputs[index] = Some(self.finish_early(call, ToolOutput::error(reason)));
                        continue;
                    }
                    (ToolCallOutcome::Allow { input, .. }, _) => rewritten = input,
                }
            }
            allowed.push((index, tool, Some(rewritten.unwrap_or(input))));
        }
        // pi's file mutation queue: a call that changes a file (write, edit) takes its place in
        // that file's line now, in source order, and waits for its turn when it runs.
        let tickets: Vec<Option<Ticket>> = allowed
            .iter()
            .map(|(index, tool, input)| {
                let args = input.as_ref().unwrap_or(&calls[*index]["arguments"]);
                tool.mutated_file(args, &self.config.cwd)
                    .map(|path| Ticket::reserve(&path))
            })
            .collect();
        if allowed.len() == 1 {
            let (index, tool, input) = allowed.pop().expect("one tool");
            let ticket = tickets.first().and_then(Option::as_ref);
            outputs[index] =
                Some(self.run_tool(tool.as_ref(), &calls[index], input.as_ref(), ticket));
        } else {
            std::thread::scope(|scope| {
                let running: Vec<_> = allowed
                    .into_iter()
                    .zip(&tickets)
                    .map(|((index, tool, input), ticket)| {
                        (
                            index,
                            scope.spawn(move || {
                                self.run_tool(
                                    tool.as_ref(),
                                    &calls[index],
                                    input.as_ref(),
                                    ticket.as_ref(),
                                )
                            }),
                        )
                    })
                    .collect();
                for (index, handle) in running {
                    let output = handle
                        .join()
                        .unwrap_or_else(|_| ToolOutput::error("the tool panicked"));
                    outputs[index] = Some(output);
                }
            });
        }
        let terminate = !calls.is_empty() && terminating == calls.len();
        let results = calls
            .iter()
            .zip(outputs)
            .map(|(call, output)| {
                let (id, name, _) = call_parts(call);
                let output = output.expect("every call has an output");
                let mut message = json!({"role": "toolResult", "toolCallId": id, "toolName": name, "content": output.content});
                message["details"] = if output.details.is_null() { json!({}) } else { output.details };
                message["isError"] = output.is_error.into();
                message["timestamp"] = now_ms().into();
                self.add_message(&message)
            })
            .collect();
        (results, terminate)
    }

    /// A call that ends before running (blocked, unknown tool): no `tool_result`.
    fn finish_early(&self, call: &Value, output: ToolOutput) -> ToolOutput {
        let (id, name, _) = call_parts(call);
        self.emit(json!({"type": "tool_execution_end", "toolCallId": id, "toolName": name, "result": output.to_json(), "isError": output.is_error}));
        output
    }

    /// Executes one allowed call: updates, the `tool_result` patch chain, the end event.
    /// `input` is the validated (coerced) arguments, or what a `tool_call` handler rewrote them
    /// to: as in pi, the tool and `tool_result` get it, while the execution events keep showing
    /// the model's arguments.
    fn run_tool(
        &self,
        tool: &dyn Tool,
        call: &Value,
        input: Option<&Value>,
        file_ticket: Option<&Ticket>,
    ) -> ToolOutput {
        let (id, name, args) = call_parts(call);
        let run_args = input.unwrap_or(args);
        let cancel = self.shared.abort_token();
        let on_update = |partial: ToolOutput| {
            self.emit(json!({"type": "tool_execution_update", "toolCallId": id, "toolName": name, "args": args, "partialResult": partial.to_json()}));
        };
        let invocation = ToolInvocation {
            tool_call_id: id,
            args: run_args,
            cwd: &self.config.cwd,
            cancel: &cancel,
            on_update: &on_update,
            file_ticket,
        };
        // pi 1.1.0: `tool_execution_end.durationMs`, what `execute` took (monotonic clock).
        let started = std::time::Instant::now();
        let executed =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| tool.execute(&invocation)));
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let mut output = match executed {
            Ok(Ok(output)) => output,
            Ok(Err(message)) => ToolOutput::error(message),
            Err(_) => ToolOutput::error(format!("Tool {name} panicked")),
        };
        if let Some(patch) = self.runner.emit_tool_result(
            id,
            name,
            run_args,
            Value::Array(output.content.clone()),
            output.details.clone(),
            output.is_error,
        ) {
            output.content = match patch.content {
                Value::Array(blocks) => blocks,
                other => vec![other],
            };
            output.details = patch.details;
            output.is_error = patch.is_error;
        }
        self.emit(json!({"type": "tool_execution_end", "toolCallId": id, "toolName": name, "result": output.to_json(), "isError": output.is_error, "durationMs": duration_ms}));
        output
    }
}

/// `(id, name, arguments)` of a toolCall block.
fn call_parts(call: &Value) -> (&str, &str, &Value) {
    (
        call["id"].as_str().unwrap_or_default(),
        call["name"].as_str().unwrap_or_default(),
        &call["arguments"],
    )
}
